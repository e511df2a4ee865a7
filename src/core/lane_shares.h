// LaneShares: how much of each matrix pass each thread of a team job owns, learned from how long
// each thread waited in the steps before.
//
// A decode step's matrix passes hand each thread a lane of chunks that it reads in long runs
// (core::LaneClaims, kernels::TeamPass), so the others can take few of its chunks or none:
// SmolLM2-135M's o and down passes are 9 chunks a lane, claimed in one run. On the 2-vCPU AMD
// EPYC VM the host gives one vCPU much less time than the other for minutes at a time
// (core/cpu_clock.h: 1.3-2.2 G dependent adds a second on one, 3.6 G on the other), and with
// even lanes the thread on the faster one then waits at the end of every pass (scratch timers:
// 17-26 % of its step against 3-10 % for the other; docs/RESULTS.md, issue 14). Here the shares
// follow the threads' rates: after each step, the shares that would have evened the threads'
// busy times (step time less waits) in that step are noted, and each share is the median of the
// last kWindow steps' (bounded). Measured so, a single step in which the host stopped one vCPU
// moves nothing, and the lanes follow a lasting difference within kWindow tokens; smoothing
// the per-step shares exponentially (a quarter per step) instead made the lanes swing by a chunk
// or two from step to step and decoded 0.85-1.0x as fast. Which thread computes which rows
// changes no result: every row is computed the same way by whichever thread holds it.
//
// Use: one LaneShares per team of threads; Reset(lanes) when the team changes, Range() to split a
// pass, Learn() after each step. Not thread-safe: Reset and Learn between steps, on one thread;
// Range from any thread while neither runs.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <utility>

#include "core/clock.h"
#include "core/thread_pool.h"

namespace smartgen::core {

class LaneShares {
 public:
  static constexpr int kMaxLanes = 16;
  // No share falls below kMinShare or rises above kMaxShare of an even one.
  static constexpr double kMinShare = 0.5, kMaxShare = 1.5;
  // Steps whose shares are kept (see Learn).
  static constexpr int kWindow = 16;

  // Even shares for `lanes` threads.
  void Reset(int lanes) {
    lanes_ = std::clamp(lanes, 1, kMaxLanes);
    even_ = true;
    steps_ = 0;
    for (int l = 0; l < lanes_; ++l) share_[l] = 1.0 / lanes_;
  }
  int lanes() const { return lanes_; }
  double share(int lane) const { return share_[lane]; }

  // Lane `lane`'s items of n: ThreadPool::SplitRange's while the shares are even, else the
  // lane's slice of n by the cumulative shares, rounded.
  std::pair<std::int64_t, std::int64_t> Range(std::int64_t n, int lane) const {
    if (even_) return ThreadPool::SplitRange(n, lane, lanes_);
    double before = 0;
    for (int l = 0; l < lane; ++l) before += share_[l];
    const auto at = [&](double cumulative) {
      return std::clamp<std::int64_t>(std::llround(cumulative * static_cast<double>(n)), 0, n);
    };
    return {at(before), lane + 1 >= lanes_ ? n : at(before + share_[lane])};
  }

  // One step of the team: lane l's thread waited wait_ns[l] of the step's step_ns. The shares
  // that would have evened the threads' busy times in that step are kept for the last kWindow
  // steps, and each share is their median: a step in which the host stopped one vCPU for a while
  // moves nothing. A step whose times say nothing (no lanes to balance, a thread busy for no
  // time) is not kept.
  void Learn(std::span<const Nanos> wait_ns, Nanos step_ns) {
    if (lanes_ < 2 || static_cast<int>(wait_ns.size()) < lanes_ || step_ns <= 0) return;
    std::array<double, kMaxLanes> rate{};
    double total_rate = 0;
    for (int l = 0; l < lanes_; ++l) {
      const Nanos busy = step_ns - wait_ns[l];
      if (busy <= 0) return;
      rate[l] = share_[l] / static_cast<double>(busy);  // its share of a pass per ns
      total_rate += rate[l];
    }
    Step& step = window_[static_cast<std::size_t>(steps_ % kWindow)];
    for (int l = 0; l < lanes_; ++l) step[l] = rate[l] / total_rate;
    ++steps_;
    if (steps_ < kWindow) return;
    const double even = 1.0 / lanes_;
    double total = 0;
    for (int l = 0; l < lanes_; ++l) {
      std::array<double, kWindow> wants{};
      for (int k = 0; k < kWindow; ++k) wants[k] = window_[k][l];
      std::nth_element(wants.begin(), wants.begin() + kWindow / 2, wants.end());
      share_[l] = std::clamp(wants[kWindow / 2], kMinShare * even, kMaxShare * even);
      total += share_[l];
    }
    for (int l = 0; l < lanes_; ++l) share_[l] /= total;
    even_ = false;
  }

 private:
  int lanes_ = 1;
  bool even_ = true;
  std::array<double, kMaxLanes> share_{1.0};
  using Step = std::array<double, kMaxLanes>;  // one step's even-making shares
  std::array<Step, kWindow> window_{};
  std::int64_t steps_ = 0;
};

// Lane `lane` of `lanes`' share of n items: by `shares` where they are shares for `lanes` threads,
// else even (ThreadPool::SplitRange). The one rule LaneClaims and the passes' idle prefetch plans
// both follow, so a thread prefetches the rows it will claim.
inline std::pair<std::int64_t, std::int64_t> LaneRange(std::int64_t n, int lane, int lanes,
                                                       const LaneShares* shares) {
  return shares != nullptr && shares->lanes() == lanes ? shares->Range(n, lane)
                                                       : ThreadPool::SplitRange(n, lane, lanes);
}

}  // namespace smartgen::core
