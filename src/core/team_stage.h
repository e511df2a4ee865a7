// TeamStage: one step of work shared by the threads of a single pool job (ThreadPool::Run), so
// that a chain of steps (a decode layer's matrix passes and its attention, model/forward_team.cc)
// runs without a round trip to the pool between them. A step is n items claimed lane by lane
// (LaneClaims) and a count of the finished ones. A thread that finds nothing left to claim waits
// only for items another thread has claimed and is running, so a job whose other threads start
// late, or never, still finishes on the threads that did start: each step falls to whoever is
// there, and a thread that arrives late skips the steps already done.
//
// Use: Reset each step of the job on one thread before the job starts. In the job, each thread
// takes items with Next() until it returns -1, calls Finish() after each one, and Wait()s (or sees
// Done()) before it reads what the step wrote: Finish() releases an item's writes, Wait() and a
// true Done() acquire them. Not copyable or movable (keep stages in an array).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

#include "core/idle_prefetch.h"
#include "core/lane_claims.h"
#include "core/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace smartgen::core {

class TeamStage {
 public:
  TeamStage() = default;
  TeamStage(const TeamStage&) = delete;
  TeamStage& operator=(const TeamStage&) = delete;

  // n items (0 <= n < 2^32) for `lanes` threads. Not while a job uses the stage.
  void Reset(std::int64_t n, int lanes) {
    claims_.emplace(n, lanes);
    n_ = static_cast<std::uint32_t>(n);
    done_.store(0, std::memory_order_relaxed);
  }

  // The calling thread's next item, or -1 when every item is claimed.
  std::int64_t Next() { return n_ == 0 ? -1 : claims_->Next(); }

  // Counts a finished item (after its writes).
  void Finish() {
    if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) done_.notify_all();
  }

  bool Done() const { return done_.load(std::memory_order_acquire) == n_; }

  // Returns once every item is finished. Meanwhile the thread prefetches its lane's ranges of
  // `idle` (ThreadPool::CurrentLane(); may be null), a KiB at a time, then spins for
  // ThreadPool::kSpinMicros and then sleeps on the count.
  void Wait(const IdlePrefetch* idle) const {
    if (Done()) return;
    const int lane = ThreadPool::CurrentLane();
    if (idle != nullptr && lane >= 0 && lane < IdlePrefetch::kMaxLanes) {
      for (int r = 0; r < idle->n_ranges[lane]; ++r) {
        const IdlePrefetch::Range& range = idle->ranges[lane][r];
        for (std::size_t at = 0; at < range.bytes; at += kPrefetchStep) {
          if (Done()) return;
          const std::size_t end = at + kPrefetchStep < range.bytes ? at + kPrefetchStep : range.bytes;
          for (std::size_t o = at; o < end; o += 64) __builtin_prefetch(range.p + o, 0, 3);
        }
      }
    }
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::microseconds(ThreadPool::kSpinMicros);
    while (!Done()) {
      for (int i = 0; i < 64 && !Done(); ++i) {
#if defined(__x86_64__)
        _mm_pause();
#endif
      }
      if (std::chrono::steady_clock::now() < deadline) continue;
      // Finished items are only ever counted up, and the last one wakes every sleeper.
      for (std::uint32_t d = done_.load(std::memory_order_acquire); d != n_;
           d = done_.load(std::memory_order_acquire)) {
        done_.wait(d, std::memory_order_acquire);
      }
    }
  }

 private:
  static constexpr std::size_t kPrefetchStep = 1024;
  std::optional<LaneClaims> claims_;
  std::uint32_t n_ = 0;
  std::atomic<std::uint32_t> done_{0};  // futex-sized, as ThreadPool's own count
};

}  // namespace smartgen::core
