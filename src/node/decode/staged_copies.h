// StagedCopies: the copies of a request's prompt blocks that must not be written in place,
// because attention may be reading the block or decoding writes rows into it:
// - an exact copy of a block held as an int8 wire copy (SmartgenOptions::int8_wire), which
//   replaces it;
// - any copy of the last prompt block when the prompt does not fill it, for a request that
//   decodes while KV still arrives (SmartGen): the decode node writes its generated tokens'
//   rows into that block, and a late full-block write would overwrite them.
// Such a copy lands in a buffer of its own; Apply, on the engine thread between steps, copies
// the prompt's rows of each copy that is ready into the KV and marks the block. Every other
// copy is written in place as before; the two kinds of in-place write never overlap on one
// block (an int8 copy meeting an exact write in flight is dropped, an exact copy meeting an
// int8 write in flight is staged).
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kv/residency.h"
#include "kv/sequence_kv.h"
#include "transfer/block_io.h"

namespace smartgen::node {

class StagedCopies {
 public:
  // `stage_last_block`: stage every copy of a partial last prompt block (SmartGen requests).
  StagedCopies(kv::SequenceKv* kv, kv::Residency* residency, std::int64_t n_prompt,
               bool stage_last_block);

  // Where a copy of `key` in `wire` goes (BlockSink::Prepare's contract): kDiscard for a copy
  // the block no longer needs; else a staging buffer or the block itself. `in_place_owner`
  // keeps the KV memory alive for in-place writes.
  transfer::SinkAction Prepare(const kv::BlockKey& key, transfer::WireFormat wire,
                               std::shared_ptr<const void> in_place_owner,
                               transfer::BlockDestination* destination);
  // The copy written to `destination` passed its checksum. An in-place copy marks the block now
  // (previous: its state before), a staged one waits for Apply. True for an in-place copy.
  bool OnReady(const kv::BlockKey& key, transfer::WireFormat wire,
               const transfer::BlockDestination& destination, kv::BlockState* previous);
  // The copy failed verification: a staged copy is dropped, an in-place one marks the block
  // absent.
  void OnRejected(const kv::BlockKey& key, const transfer::BlockDestination& destination);

  // Engine thread, between steps: applies the ready copies that can be applied now. Returns how
  // many blocks it marked.
  int Apply();
  std::int64_t staged_total() const;  // copies staged so far
  // Staged copies that have become ready so far (whether applied or not): a waiter that saw
  // this change has a copy to Apply. Lock-free, so a residency wait predicate may read it.
  std::int64_t ready_total() const { return ready_total_.load(std::memory_order_acquire); }

 private:
  struct Copy {
    kv::BlockKey key;
    transfer::WireFormat wire;
    std::shared_ptr<std::vector<std::byte>> bytes;  // K then V, half_block_bytes each
    bool ready = false;
  };
  struct InPlace {
    int exact = 0;
    int int8 = 0;
  };
  std::int64_t Index(const kv::BlockKey& k) const;
  bool PartialLast(const kv::BlockKey& k) const;
  void CopyRows(const Copy& c);

  kv::SequenceKv* kv_;
  kv::Residency* residency_;
  std::int64_t n_prompt_;
  bool stage_last_block_;
  mutable std::mutex mu_;
  std::vector<Copy> copies_;                            // staged, in arrival order
  std::unordered_map<std::int64_t, InPlace> in_place_;  // writes in flight, by block index
  std::int64_t staged_total_ = 0;
  std::atomic<std::int64_t> ready_total_{0};
};

}  // namespace smartgen::node
