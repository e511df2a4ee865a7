// The per-peer send scheduler (internal to the endpoint): jobs of block ranges in three strict
// priority classes, FIFO within a class. The sender takes one frame's worth of adjacent blocks
// at a time, so a job of a higher class waits at most for the frame being sent: preemption at
// block-run boundaries. Not thread-safe: the endpoint guards it.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <list>
#include <map>

#include "core/clock.h"
#include "transfer/frame.h"
#include "transfer/types.h"

namespace smartgen::transfer {

// Blocks to put in one data frame.
struct Chunk {
  std::uint64_t op_id = 0;   // the local push op, or the peer's pull op being served
  bool pull_reply = false;
  Priority priority = Priority::kSpeculative;
  BlockRange range;
  std::uint32_t generation = 0;
  WireFormat wire = WireFormat::kNative;
};

class SendQueue {
 public:
  // Adds a job, or replaces the pending ranges of the job with the same (op_id, pull_reply)
  // (a repeated PULL names everything still missing).
  void Put(std::uint64_t op_id, bool pull_reply, Priority priority, std::vector<PullEntry> ranges,
           WireFormat wire = WireFormat::kNative);
  // Puts ranges at the front of a job (creating it), parked until `not_before`.
  void PutFront(const Chunk& chunk, core::Nanos not_before = 0);
  void Remove(std::uint64_t op_id, bool pull_reply);
  // Drops every pending block of `request_id`.
  void RemoveRequest(std::uint64_t request_id);
  void Clear();
  // Makes parked jobs ready now.
  void Unpark();

  // Takes up to `max_blocks` adjacent blocks from the first ready job of the most urgent class.
  // False when no job is ready; `next_ready` then holds the earliest time a parked job wakes.
  bool Take(core::Nanos now, std::uint32_t max_blocks, Chunk* chunk, core::Nanos* next_ready);

  std::uint64_t queued_blocks() const { return queued_blocks_; }
  bool empty() const { return index_.empty(); }

 private:
  struct Job {
    std::uint64_t op_id;
    bool pull_reply;
    Priority priority;
    std::deque<PullEntry> pending;
    core::Nanos not_before = 0;
    WireFormat wire = WireFormat::kNative;
  };
  using JobList = std::list<Job>;
  using Key = std::pair<std::uint64_t, bool>;
  void Erase(JobList::iterator it);

  std::array<JobList, kNumPriorities> classes_;
  std::map<Key, JobList::iterator> index_;
  std::uint64_t queued_blocks_ = 0;
};

}  // namespace smartgen::transfer
