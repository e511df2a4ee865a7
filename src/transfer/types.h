// The vocabulary of the transfer engine: block keys and ranges, KV geometry, priorities, and
// the typed ids (peers, transfers) its API hands out. Plain data; no behaviour beyond helpers.
//
// A block is B consecutive prompt tokens of one layer and one KV head (DESIGN.md section 3).
// Its payload on the wire and in a BlockSource/BlockSink is its K bytes then its V bytes,
// each block_tokens x head_dim x dtype size. A BlockRange is a run of adjacent blocks of one
// (request, layer, kv_head); runs are what frames carry.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "kv/block_key.h"

namespace smartgen::transfer {

using ConstBytes = std::span<const std::byte>;
using MutableBytes = std::span<std::byte>;

// One block of one request: the request's id and the block's address in its prompt, in the
// block vocabulary of kv/block_key.h.
struct BlockKey : kv::BlockKey {
  std::uint64_t request_id = 0;

  BlockKey() = default;
  BlockKey(std::uint64_t id, const kv::BlockKey& key) : kv::BlockKey(key), request_id(id) {}
  BlockKey(std::uint64_t id, std::int32_t layer, std::int32_t kv_head, std::int32_t block)
      : BlockKey(id, kv::BlockKey{layer, kv_head, block}) {}
  const kv::BlockKey& key() const { return *this; }
  friend auto operator<=>(const BlockKey&, const BlockKey&) = default;
};

// A run of adjacent blocks of one request's (layer, kv_head); runs are what frames carry.
struct BlockRange : kv::BlockRange {
  std::uint64_t request_id = 0;

  BlockRange() = default;
  BlockRange(std::uint64_t id, const kv::BlockRange& range)
      : kv::BlockRange(range), request_id(id) {}
  BlockRange(std::uint64_t id, std::int32_t layer, std::int32_t kv_head, std::int32_t first_block,
             std::int32_t n_blocks)
      : BlockRange(id, kv::BlockRange{layer, kv_head, first_block, n_blocks}) {}
  BlockKey Key(std::int32_t i) const { return {request_id, kv::BlockRange::Key(i)}; }
  const kv::BlockRange& range() const { return *this; }
  friend auto operator<=>(const BlockRange&, const BlockRange&) = default;
};

// `keys` of one request as runs (kv::ToRuns: adjacent keys in the given order join a run).
std::vector<BlockRange> RangesOf(std::uint64_t request_id, std::span<const kv::BlockKey> keys);

std::string ToString(const BlockKey& key);
std::string ToString(const BlockRange& range);

// Element type of the stored (and transferred) KV.
enum class KvDType : std::uint8_t { kF32 = 0, kF16 = 1, kBF16 = 2, kI8 = 3 };
std::size_t DTypeSize(KvDType dtype);
std::string_view DTypeName(KvDType dtype);

// How a block's bytes are laid out. Only one layout exists today; it is in the handshake so
// that a future one is refused rather than misread.
enum class KvLayout : std::uint8_t {
  kKThenV = 1,  // payload = K[block_tokens][head_dim] then V[block_tokens][head_dim]
};

// The shape of the KV cache both endpoints agree on (checked in the handshake).
struct KvGeometry {
  std::uint32_t n_layers = 0;
  std::uint32_t n_kv_heads = 0;
  std::uint32_t head_dim = 0;
  std::uint32_t block_tokens = 16;
  KvDType dtype = KvDType::kF16;

  // Bytes of K (or of V) in one block.
  std::size_t half_block_bytes() const {
    return std::size_t{block_tokens} * head_dim * DTypeSize(dtype);
  }
  // Bytes of one block's payload: K then V.
  std::size_t block_bytes() const { return 2 * half_block_bytes(); }

  friend bool operator==(const KvGeometry&, const KvGeometry&) = default;
};

// Transfer priority classes, highest first. A lower value always goes first on a link; a
// frame of a lower class is never started while a higher class has a frame ready.
enum class Priority : std::uint8_t {
  kOnDemand = 0,     // blocks the decode node needs for the current step
  kProactive = 1,    // profile-ranked blocks pushed during prefill
  kSpeculative = 2,  // everything else, streamed in the background
};
inline constexpr int kNumPriorities = 3;
std::string_view PriorityName(Priority priority);

// Direction of a transfer, seen from the endpoint that posts it.
enum class Direction : std::uint8_t {
  kPush = 0,  // local BlockSource -> peer's BlockSink
  kPull = 1,  // peer's BlockSource -> local BlockSink
};

// A connected peer of an Endpoint. Ids are never reused within an Endpoint.
struct PeerId {
  std::uint64_t value = 0;
  friend auto operator<=>(const PeerId&, const PeerId&) = default;
};

// A posted transfer. Ids are never reused within an Endpoint; 0 is never valid.
struct TransferHandle {
  std::uint64_t value = 0;
  friend auto operator<=>(const TransferHandle&, const TransferHandle&) = default;
};

// Where a transfer is. kInProgress is a state, not an error.
enum class TransferState : std::uint8_t {
  kInProgress = 0,
  kDone = 1,       // every block was delivered and verified
  kFailed = 2,     // see TransferProgress::status (kUnavailable: peer down, retry)
  kCancelled = 3,  // cancelled locally or by the peer
};
std::string_view TransferStateName(TransferState state);

// A snapshot of one transfer.
struct TransferProgress {
  TransferState state = TransferState::kInProgress;
  std::uint64_t blocks_total = 0;
  std::uint64_t blocks_done = 0;   // delivered and verified
  std::uint64_t bytes_done = 0;    // payload bytes of blocks_done
  std::uint64_t retries = 0;       // ranges sent or requested again
  Status status;                   // OK, or why it failed / was cancelled
  bool terminal() const { return state != TransferState::kInProgress; }
};

}  // namespace smartgen::transfer

template <>
struct std::hash<smartgen::transfer::BlockKey> {
  std::size_t operator()(const smartgen::transfer::BlockKey& k) const noexcept {
    std::uint64_t h = k.request_id * 0x9E3779B97F4A7C15ull;
    h ^= (static_cast<std::uint64_t>(k.layer) << 40) ^
         (static_cast<std::uint64_t>(k.kv_head) << 24) ^ static_cast<std::uint32_t>(k.block);
    return static_cast<std::size_t>(h * 0xBF58476D1CE4E5B9ull);
  }
};
