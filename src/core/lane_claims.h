// LaneClaims: hands out the chunks [0, n) of one parallel pass so that every thread works
// through a contiguous lane of them first (ThreadPool::SplitRange(n, lane, lanes)) and then
// helps with the other lanes, front to back. A streaming kernel then reads neighbouring rows
// from one chunk to the next (its prefetch and the CPU's keep running), while a thread that is
// preempted or late still only delays the chunk it holds: the others take the rest of its lane.
// A thread alone (the other one descheduled by a node's transfer threads) gets 0, 1, 2, ... in
// order.
//
// Use: one LaneClaims per pass, Next() once per chunk call of ThreadPool::ForEachChunk(n, ...),
// which calls exactly n times: every call then gets a chunk (a claim fails only when all n are
// taken); or NextRun(), whose runs of several chunks leave some of those calls nothing.
// Thread-safety: Next() and NextRun() from any threads; the object must outlive the pass.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>

#include "core/lane_shares.h"
#include "core/thread_pool.h"

namespace smartgen::core {

class LaneClaims {
 public:
  static constexpr int kMaxLanes = 16;

  // With `shares` (may be null) for as many lanes, the lanes are sized by them (LaneRange).
  LaneClaims(std::int64_t n, int lanes, const LaneShares* shares = nullptr)
      : id_(NextId()), lanes_(std::clamp(lanes, 1, kMaxLanes)) {
    for (int l = 0; l < lanes_; ++l) {
      const auto [begin, end] = LaneRange(n, l, lanes_, shares);
      lane_[l].next.store(begin, std::memory_order_relaxed);
      lane_[l].end = end;
    }
  }
  LaneClaims(const LaneClaims&) = delete;
  LaneClaims& operator=(const LaneClaims&) = delete;

  // The calling thread's next chunk: the next of its own lane, else the next of the following
  // lanes; -1 when every chunk is taken. A thread's lane is its ThreadPool::CurrentLane() (the
  // pool's caller 0, worker i lane i, so a pass's IdlePrefetch plan knows which thread reads
  // which lane); a thread outside a pool pass takes a lane no other such thread has, by arrival.
  std::int64_t Next() { return NextRun(1).first; }

  // Chunks [first, first + count) that the calling thread claims at once: up to `own_run` (>= 1)
  // of its own lane's, else one of a following lane's; first -1 and count 0 when every chunk is
  // taken. A thread that reads its lane in long runs keeps its streams going (one kernel call per
  // run), while the chunks it has not claimed yet stay for the others.
  struct Run {
    std::int64_t first = -1, count = 0;
  };
  Run NextRun(std::int64_t own_run) {
    thread_local Mine mine;
    if (mine.id != id_) {
      mine.id = id_;
      const int pool_lane = ThreadPool::CurrentLane();
      mine.lane = pool_lane >= 0 ? pool_lane % lanes_
                                 : assigned_.fetch_add(1, std::memory_order_relaxed) % lanes_;
    }
    for (int i = 0; i < lanes_; ++i) {
      Lane& l = lane_[(mine.lane + i) % lanes_];
      if (l.next.load(std::memory_order_relaxed) >= l.end) continue;
      const std::int64_t k = i == 0 ? std::max<std::int64_t>(own_run, 1) : 1;
      const std::int64_t c = l.next.fetch_add(k, std::memory_order_relaxed);
      if (c < l.end) return {c, std::min(k, l.end - c)};
    }
    return {};
  }

 private:
  struct Mine {
    std::uint64_t id = 0;
    int lane = 0;
  };
  struct alignas(64) Lane {
    std::atomic<std::int64_t> next{0};
    std::int64_t end = 0;
  };
  static std::uint64_t NextId() {
    static std::atomic<std::uint64_t> ids{0};
    return ids.fetch_add(1, std::memory_order_relaxed) + 1;
  }

  const std::uint64_t id_;  // tells a thread's cached lane of an earlier pass from this one's
  const int lanes_;
  std::atomic<int> assigned_{0};
  std::array<Lane, kMaxLanes> lane_;
};

}  // namespace smartgen::core
