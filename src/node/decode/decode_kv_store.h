// DecodeKvStore: the decode node's KV of in-flight requests, filled by the transfer engine as a
// BlockSink. Each request owns a SequenceKv sized for its prompt and output, and a Residency
// over its prompt blocks; arriving blocks are written straight into the sequence's blocks and
// marked PRESENT after their checksum passed. Blocks of unknown (finished, cancelled) requests
// and blocks already present are discarded, so a duplicate or late copy never overwrites data.
// A removed request's memory is kept until no block write into it is pending (the engine is
// between Prepare and OnBlockReady/OnBlockRejected), or for kRetireGrace if the link died
// mid-frame and no callback will come.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>
#include <mutex>
#include <unordered_map>

#include "core/clock.h"
#include "kv/block_pool.h"
#include "kv/residency.h"
#include "kv/sequence_kv.h"
#include "transfer/block_io.h"

namespace smartgen::node {

class DecodeKvStore final : public transfer::BlockSink {
 public:
  struct Entry {
    Entry(kv::BlockPool* pool, const kv::KvGeometry& g, std::int64_t n_prompt, std::uint64_t id)
        : kv(pool), residency(g.n_layers, g.n_kv_heads, g.BlocksFor(n_prompt)), n_prompt(n_prompt),
          request_id(id) {}
    kv::SequenceKv kv;
    kv::Residency residency;  // over the prompt's blocks
    std::int64_t n_prompt;
    std::uint64_t request_id;
    std::atomic<int> pending_writes{0};
    std::atomic<std::uint64_t> blocks_received{0};  // verified copies written (duplicates too)
    std::atomic<std::uint64_t> blocks_duplicate{0};  // arrived when already present: dropped
    std::atomic<std::uint64_t> blocks_requested_received{0};  // ... of blocks asked for on demand
  };

  explicit DecodeKvStore(kv::BlockPool* pool) : pool_(pool) {}

  // Registers a request whose prompt has n_prompt tokens and reserves KV for `capacity_tokens`
  // (prompt + output). kResourceExhausted when the pool is full; kInvalidArgument if known.
  Result<std::shared_ptr<Entry>> Add(std::uint64_t request_id, std::int64_t n_prompt,
                                     std::int64_t capacity_tokens);
  std::shared_ptr<Entry> Find(std::uint64_t request_id) const;
  // Forgets the request; later blocks for it are discarded. Waiters are cancelled.
  void Remove(std::uint64_t request_id);
  std::size_t size() const;

  // transfer::BlockSink
  Status Prepare(const transfer::BlockKey& key, transfer::BlockDestination* destination,
                 transfer::SinkAction* action) override;
  void OnBlockReady(const transfer::BlockKey& key) override;
  void OnBlockRejected(const transfer::BlockKey& key, const Status& why) override;

 private:
  kv::BlockPool* pool_;
  mutable std::mutex mu_;
  // The live or retired entry a pending write belongs to.
  std::shared_ptr<Entry> FindWriting(std::uint64_t request_id) const;
  void FreeRetiredLocked();

  static constexpr core::Nanos kRetireGrace = core::Seconds(10);

  std::unordered_map<std::uint64_t, std::shared_ptr<Entry>> entries_;
  std::vector<std::pair<core::Nanos, std::shared_ptr<Entry>>> retired_;  // (when, entry)
};

}  // namespace smartgen::node
