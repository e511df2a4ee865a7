// DecodeKvStore: the decode node's KV of in-flight requests, filled by the transfer engine as a
// BlockSink. Each request owns a SequenceKv sized for its prompt and output, and a Residency
// over its prompt blocks; arriving blocks are written straight into the sequence's blocks and
// marked PRESENT after their checksum passed. Blocks of unknown (finished, cancelled) requests
// and blocks already present are discarded, so a duplicate or late copy never overwrites data.
// Each destination handed to the engine owns its entry (BlockDestination::owner) and counts as a
// pending write until the engine lets go of it, so a removed request's memory lives exactly as
// long as a write into it can still happen, and Detach can wait for the last one.
// A request takes KV from one link only: the one Bind tied it to (the link whose PrefillStarted
// proved the request's KV ticket). Data frames from any other link - or for a request not yet
// bound - are refused in Admit before a byte is written, counted, and logged once per request.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "core/metrics.h"
#include "kv/block_pool.h"
#include "kv/residency.h"
#include "kv/sequence_kv.h"
#include "node/decode/staged_copies.h"
#include "transfer/block_io.h"

namespace smartgen::node {

class DecodeKvStore final : public transfer::BlockSink {
 public:
  struct Entry {
    Entry(kv::BlockPool* pool, const kv::KvGeometry& g, std::int64_t n_prompt, std::uint64_t id,
          bool stage_last_block)
        : kv(pool),
          residency(g.n_layers, g.n_kv_heads, g.BlocksFor(n_prompt)),
          n_prompt(n_prompt),
          request_id(id),
          staged(&kv, &residency, n_prompt, stage_last_block) {}
    kv::SequenceKv kv;
    kv::Residency residency;  // over the prompt's blocks
    std::int64_t n_prompt;
    std::uint64_t request_id;
    std::atomic<std::uint64_t> blocks_received{0};  // verified copies written (duplicates too)
    std::atomic<std::uint64_t> blocks_duplicate{0};  // arrived when already present: dropped
    // Bytes those copies took on the wire (int8 copies are smaller than native ones).
    std::atomic<std::uint64_t> bytes_received{0};
    std::atomic<std::uint64_t> bytes_duplicate{0};
    std::atomic<std::uint64_t> blocks_requested_received{0};  // ... of blocks asked for on demand
    std::atomic<core::Nanos> last_block_at{0};  // when the last verified block landed
    // Destinations handed to the engine and not yet let go (each one's owner holds a count).
    std::atomic<int> pending_writes{0};
    // The KV link (PeerId::value) this request takes blocks from; 0 until Bind.
    std::atomic<std::uint64_t> link{0};
    std::atomic<std::uint64_t> frames_refused{0};  // data frames from another link
    StagedCopies staged;  // copies that must not be written in place (after kv: uses it)
  };

  explicit DecodeKvStore(kv::BlockPool* pool) : pool_(pool) {}
  // Called (on a transfer thread) after each block landed; set before the store is shared.
  void set_on_block_ready(std::function<void()> fn) { on_block_ready_ = std::move(fn); }
  // Counts refused data frames (Admit); set before the store is shared; may stay null.
  void set_refused_counter(core::Counter* counter) { refused_ = counter; }

  // Registers a request whose prompt has n_prompt tokens and reserves KV for `capacity_tokens`
  // (prompt + output). `decodes_early`: the request decodes while its KV still arrives
  // (SmartGen), so copies of its partial last block are staged (StagedCopies). `first_needed`
  // (one per layer, or empty: every block) restricts what the residency waits for
  // (kv::Residency::RestrictToNeeded: a sliding-window layer needs only its window); the KV of
  // the other blocks goes back to the pool at once (kv::SequenceKv::Release), and a copy of
  // one that arrives anyway is discarded. kResourceExhausted when the pool is full;
  // kInvalidArgument if known.
  Result<std::shared_ptr<Entry>> Add(std::uint64_t request_id, std::int64_t n_prompt,
                                     std::int64_t capacity_tokens, bool decodes_early = false,
                                     std::span<const std::int64_t> first_needed = {});
  std::shared_ptr<Entry> Find(std::uint64_t request_id) const;
  // Forgets the request; later blocks for it are discarded. Waiters are cancelled.
  void Remove(std::uint64_t request_id);
  // Forgets the request like Remove, without cancelling its waiters, then waits until no
  // write into its memory is in progress: afterwards only the caller writes its KV (the local
  // recompute of what the link did not bring). kDeadlineExceeded if a write is still pending.
  Status Detach(std::uint64_t request_id, core::Deadline deadline);
  std::size_t size() const;
  // Ties the request to `link`: from now on it takes blocks from that link only. True when it
  // is tied to `link` (now or before); false when unknown or tied to another link.
  bool Bind(std::uint64_t request_id, transfer::PeerId link);

  // transfer::BlockSink
  // kPermissionDenied for a frame of a known request from a link it is not tied to.
  Status Admit(transfer::PeerId peer, const transfer::BlockRange& range) override;
  Status Prepare(const transfer::BlockKey& key, transfer::WireFormat wire,
                 transfer::BlockDestination* destination, transfer::SinkAction* action) override;
  void OnBlockReady(const transfer::BlockKey& key, transfer::WireFormat wire,
                    const transfer::BlockDestination& destination) override;
  void OnBlockRejected(const transfer::BlockKey& key, const transfer::BlockDestination& destination,
                       const Status& why) override;

 private:
  // Bytes one block takes on the wire in `wire`.
  std::uint64_t WireBytes(transfer::WireFormat wire) const;

  kv::BlockPool* pool_;
  std::function<void()> on_block_ready_;
  core::Counter* refused_ = nullptr;
  mutable std::mutex mu_;
  std::unordered_map<std::uint64_t, std::shared_ptr<Entry>> entries_;
};

}  // namespace smartgen::node
