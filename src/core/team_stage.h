// TeamStage: one step of work shared by the threads of a single pool job (ThreadPool::Run), so
// that a chain of steps (a decode layer's matrix passes and its attention, model/forward_team.cc)
// runs without a round trip to the pool between them. A step is n items claimed lane by lane
// (LaneClaims) and a count of the finished ones. A thread that finds nothing left to claim waits
// only for items another thread has claimed and is running, so a job whose other threads start
// late, or never, still finishes on the threads that did start: each step falls to whoever is
// there, and a thread that arrives late skips the steps already done.
//
// Use: Reset each step of the job on one thread before the job starts. In the job, each thread
// takes items with Next() until it returns -1 (or runs of them with NextRun() until one is empty),
// calls Finish() after each one (Finish(count) after a run), and Wait()s (or sees Done()) before
// it reads what the step wrote. Finish() counts on the thread's own lane (a cache line no other
// pool thread writes); the thread's Next() that returns -1 adds its lane's
// count to the step's, releasing the items' writes: a thread that finishes an item must go on
// calling Next() until it returns -1. Wait() and a true Done() acquire the writes. So a step
// costs one shared read-modify-write per thread instead of one per item, and a pool thread no
// locked instruction per item: on the 2-vCPU Zen 5 VM perf put 2 % of a SmolLM2-135M Q8_0 decode
// step's samples on the shared count's add after each chunk, and the team step's passes alone ran
// 1.045x as fast without it (median of 10 alternating rounds; docs/RESULTS.md, issue 14). Not
// copyable or movable (keep stages in an array).
#pragma once

#include <algorithm>
#include <array>
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
  // With `shares` (may be null) for as many lanes, the lanes are sized by them (LaneRange).
  void Reset(std::int64_t n, int lanes, const LaneShares* shares = nullptr) {
    claims_.emplace(n, lanes, shares);
    n_ = static_cast<std::uint32_t>(n);
    done_.store(0, std::memory_order_relaxed);
    lanes_ = std::clamp(lanes, 1, LaneClaims::kMaxLanes);
    for (int l = 0; l < lanes_; ++l) finished_[l].count.store(0, std::memory_order_relaxed);
    finished_[LaneClaims::kMaxLanes].count.store(0, std::memory_order_relaxed);
  }

  // The calling thread's next item, or -1 when every item is claimed (and then the items this
  // thread finished are counted in the step's total).
  std::int64_t Next() { return NextRun(1).first; }

  // Items [first, first + count) claimed at once (LaneClaims::NextRun: up to own_run of the
  // thread's own lane, else one); count 0 when every item is claimed (and then as Next() above).
  LaneClaims::Run NextRun(std::int64_t own_run) {
    const LaneClaims::Run run = n_ == 0 ? LaneClaims::Run{} : claims_->NextRun(own_run);
    if (run.count == 0) Publish();
    return run;
  }

  // Counts `items` finished items (after their writes) on the thread's lane; see Next(). A pool
  // lane's count is written by that lane's thread alone, so it takes a plain store (a locked add
  // on the thread's own line still held 1 % of the step's samples); threads outside a pool pass
  // share theirs.
  void Finish(std::uint32_t items = 1) {
    const int lane = ThreadPool::CurrentLane();
    if (lane >= 0 && lane < lanes_) {
      std::atomic<std::uint32_t>& count = finished_[lane].count;
      count.store(count.load(std::memory_order_relaxed) + items, std::memory_order_release);
    } else {
      finished_[LaneClaims::kMaxLanes].count.fetch_add(items, std::memory_order_release);
    }
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
  // Items finished on one lane and not yet added to done_. Threads outside a pool pass (or past
  // the stage's lanes) share the last one: the counts are atomic, so sharing only costs time.
  struct alignas(64) Finished {
    std::atomic<std::uint32_t> count{0};
  };

  Finished& Mine() {
    const int lane = ThreadPool::CurrentLane();
    return finished_[lane >= 0 && lane < lanes_ ? lane : LaneClaims::kMaxLanes];
  }

  // Adds the calling thread's lane's finished items to done_, waking the waiters at the last.
  void Publish() {
    const std::uint32_t k = Mine().count.exchange(0, std::memory_order_acq_rel);
    if (k != 0 && done_.fetch_add(k, std::memory_order_acq_rel) + k == n_) done_.notify_all();
  }

  static constexpr std::size_t kPrefetchStep = 1024;
  std::optional<LaneClaims> claims_;
  std::uint32_t n_ = 0;
  int lanes_ = 1;
  std::atomic<std::uint32_t> done_{0};  // futex-sized, as ThreadPool's own count
  std::array<Finished, LaneClaims::kMaxLanes + 1> finished_{};
};

}  // namespace smartgen::core
