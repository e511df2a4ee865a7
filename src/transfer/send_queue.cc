#include "transfer/send_queue.h"

#include <algorithm>
#include <limits>

namespace smartgen::transfer {
namespace {

std::uint64_t Blocks(const std::deque<PullEntry>& pending) {
  std::uint64_t n = 0;
  for (const PullEntry& e : pending) n += e.range.n_blocks;
  return n;
}

}  // namespace

void SendQueue::Erase(JobList::iterator it) {
  queued_blocks_ -= Blocks(it->pending);
  index_.erase({it->op_id, it->pull_reply});
  classes_[static_cast<int>(it->priority)].erase(it);
}

void SendQueue::Put(std::uint64_t op_id, bool pull_reply, Priority priority,
                    std::vector<PullEntry> ranges) {
  auto found = index_.find({op_id, pull_reply});
  if (found != index_.end()) Erase(found->second);
  Job job{op_id, pull_reply, priority, {}, 0};
  for (PullEntry& e : ranges) {
    if (e.range.n_blocks == 0) continue;
    queued_blocks_ += e.range.n_blocks;
    job.pending.push_back(e);
  }
  if (job.pending.empty()) return;
  JobList& list = classes_[static_cast<int>(priority)];
  list.push_back(std::move(job));
  index_[{op_id, pull_reply}] = std::prev(list.end());
}

void SendQueue::PutFront(const Chunk& chunk, core::Nanos not_before) {
  if (chunk.range.n_blocks == 0) return;
  auto found = index_.find({chunk.op_id, chunk.pull_reply});
  JobList::iterator it;
  if (found == index_.end()) {
    // The job ran dry while this chunk was out: recreate it ahead of its class.
    JobList& list = classes_[static_cast<int>(chunk.priority)];
    list.push_front(Job{chunk.op_id, chunk.pull_reply, chunk.priority, {}, 0});
    it = list.begin();
    index_[{chunk.op_id, chunk.pull_reply}] = it;
  } else {
    it = found->second;
  }
  PullEntry* front = it->pending.empty() ? nullptr : &it->pending.front();
  if (front != nullptr && front->generation == chunk.generation &&
      front->range.request_id == chunk.range.request_id && front->range.layer == chunk.range.layer &&
      front->range.kv_head == chunk.range.kv_head &&
      front->range.first_block == chunk.range.end_block()) {
    front->range.first_block = chunk.range.first_block;  // rejoin the run it was cut from
    front->range.n_blocks += chunk.range.n_blocks;
  } else {
    it->pending.push_front({chunk.range, chunk.generation});
  }
  it->not_before = std::max(it->not_before, not_before);
  queued_blocks_ += chunk.range.n_blocks;
}

void SendQueue::Remove(std::uint64_t op_id, bool pull_reply) {
  auto found = index_.find({op_id, pull_reply});
  if (found != index_.end()) Erase(found->second);
}

void SendQueue::RemoveRequest(std::uint64_t request_id) {
  for (JobList& list : classes_) {
    for (auto it = list.begin(); it != list.end();) {
      auto& pending = it->pending;
      for (auto e = pending.begin(); e != pending.end();) {
        if (e->range.request_id == request_id) {
          queued_blocks_ -= e->range.n_blocks;
          e = pending.erase(e);
        } else {
          ++e;
        }
      }
      auto next = std::next(it);
      if (pending.empty()) Erase(it);
      it = next;
    }
  }
}

void SendQueue::Clear() {
  for (JobList& list : classes_) list.clear();
  index_.clear();
  queued_blocks_ = 0;
}

void SendQueue::Unpark() {
  for (JobList& list : classes_) {
    for (Job& job : list) job.not_before = 0;
  }
}

bool SendQueue::Take(core::Nanos now, std::uint32_t max_blocks, Chunk* chunk,
                     core::Nanos* next_ready) {
  *next_ready = std::numeric_limits<core::Nanos>::max();
  for (JobList& list : classes_) {
    for (auto it = list.begin(); it != list.end(); ++it) {
      if (it->not_before > now) {
        *next_ready = std::min(*next_ready, it->not_before);
        continue;
      }
      PullEntry& front = it->pending.front();
      const auto n = static_cast<std::int32_t>(
          std::min<std::int64_t>(std::max<std::uint32_t>(max_blocks, 1), front.range.n_blocks));
      chunk->op_id = it->op_id;
      chunk->pull_reply = it->pull_reply;
      chunk->priority = it->priority;
      chunk->generation = front.generation;
      chunk->range = front.range;
      chunk->range.n_blocks = n;
      front.range.first_block += n;
      front.range.n_blocks -= n;
      queued_blocks_ -= n;
      if (front.range.n_blocks == 0) it->pending.pop_front();
      if (it->pending.empty()) Erase(it);
      return true;
    }
  }
  return false;
}

}  // namespace smartgen::transfer
