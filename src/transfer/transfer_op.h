// The record of one posted transfer (internal to the endpoint): its block ranges, normalised
// into sorted disjoint runs, which blocks have been delivered, and for pushes the frames still
// waiting for the peer's acknowledgement. Not thread-safe: the endpoint guards it.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/clock.h"
#include "transfer/frame.h"
#include "transfer/types.h"

namespace smartgen::transfer {

// Sorts ranges and merges overlapping or adjacent ones into disjoint runs.
std::vector<BlockRange> NormalizeRanges(std::vector<BlockRange> ranges);

class TransferOp {
 public:
  // `ranges` must be normalised (NormalizeRanges); `generations` gives each range's request
  // generation at post time.
  TransferOp(std::uint64_t id, PeerId peer, Direction direction, Priority priority,
             std::vector<BlockRange> ranges, const std::vector<std::uint32_t>& generations,
             core::Deadline deadline, core::Nanos now);

  std::uint64_t id() const { return id_; }
  PeerId peer() const { return peer_; }
  Direction direction() const { return direction_; }
  Priority priority() const { return priority_; }
  core::Deadline deadline() const { return deadline_; }
  TransferState state() const { return state_; }
  const Status& status() const { return status_; }
  bool in_progress() const { return state_ == TransferState::kInProgress; }
  bool complete() const { return blocks_done_ == blocks_total_; }
  core::Nanos finished_at() const { return finished_at_; }

  void Finish(TransferState state, Status status, core::Nanos now);

  // Whether the op covers `key`, and whether it was delivered.
  bool Covers(const BlockKey& key) const;
  bool IsDone(const BlockKey& key) const;
  bool Touches(std::uint64_t request_id) const;
  // Marks the blocks of `range` that the op covers as delivered; returns how many were new.
  std::uint32_t MarkDone(const BlockRange& range);
  // Undelivered blocks as (range, generation) runs.
  std::vector<PullEntry> Missing() const;
  // Every range with its generation (what a push job sends).
  std::vector<PullEntry> AllEntries() const;

  // Push: a frame covering `range` was handed to the transport. Returns its attempt count.
  int RecordSent(const BlockRange& range, core::Nanos now);
  // Push: the peer answered for `range`; returns the attempts it took (0 when unknown).
  int TakeInFlight(const BlockRange& range);
  // Push: frames sent before `cutoff` and still unacknowledged (their timers are reset to now).
  std::vector<std::pair<BlockRange, int>> TimedOut(core::Nanos cutoff, core::Nanos now);
  // Pull: a corrupt copy of `range` arrived; returns how many times that happened.
  int CountCorrupt(const BlockRange& range);

  // Timers of the retransmission logic.
  core::Nanos last_progress = 0;  // a block was delivered (or the op was posted)
  core::Nanos last_request = 0;   // pull: the last PULL frame for the op was queued
  std::uint64_t retries = 0;

  TransferProgress Snapshot(std::size_t block_bytes) const;

 private:
  struct Run {
    BlockRange range;
    std::uint32_t generation = 0;
    std::vector<std::uint8_t> done;  // per block
  };
  struct InFlight {
    std::int32_t n_blocks = 0;
    core::Nanos sent_at = 0;
    int attempts = 0;
  };
  // Index of the run containing `key`, or -1.
  int FindRun(const BlockKey& key) const;

  const std::uint64_t id_;
  const PeerId peer_;
  const Direction direction_;
  const Priority priority_;
  const core::Deadline deadline_;
  std::vector<Run> runs_;  // sorted, disjoint
  std::uint64_t blocks_total_ = 0;
  std::uint64_t blocks_done_ = 0;
  TransferState state_ = TransferState::kInProgress;
  Status status_;
  core::Nanos finished_at_ = 0;
  std::map<BlockKey, InFlight> in_flight_;  // push, keyed by a frame's first block
  std::map<BlockKey, int> corrupt_;         // pull, keyed by a frame's first block
};

}  // namespace smartgen::transfer
