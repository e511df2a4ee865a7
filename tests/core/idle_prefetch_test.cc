#include "core/idle_prefetch.h"

#include <atomic>
#include <cstddef>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/lane_claims.h"
#include "core/thread_pool.h"

namespace smartgen::core {
namespace {

TEST(IdlePrefetch, AddMergesARangeThatContinuesTheLastAndDropsPastTheLimit) {
  std::vector<std::byte> buf(1 << 16);
  IdlePrefetch plan;
  plan.Add(1, buf.data(), 100);
  plan.Add(1, buf.data() + 100, 50);  // continues: merged
  EXPECT_EQ(plan.n_ranges[1], 1);
  EXPECT_EQ(plan.ranges[1][0].bytes, 150u);
  for (int i = 0; i < IdlePrefetch::kMaxRanges + 2; ++i) plan.Add(1, buf.data() + 1000 * (i + 1), 10);
  EXPECT_EQ(plan.n_ranges[1], IdlePrefetch::kMaxRanges);
  EXPECT_EQ(plan.Bytes(1), 150u + 10u * (IdlePrefetch::kMaxRanges - 1));
  plan.Add(0, buf.data(), 0);                            // nothing
  plan.Add(IdlePrefetch::kMaxLanes, buf.data(), 10);     // no such lane
  plan.Add(-1, buf.data(), 10);
  EXPECT_EQ(plan.n_ranges[0], 0);
}

// The pool's idle threads prefetch while a pass finishes; the pass itself runs every chunk once
// (many passes, so the worker often waits, and plans that change under a late worker).
TEST(IdlePrefetch, PassesWithAPlanRunEveryChunkOnce) {
  ThreadPool pool(2);
  std::vector<std::byte> weights(8 << 20);
  for (int pass = 0; pass < 300; ++pass) {
    IdlePrefetch plan;
    plan.Add(0, weights.data() + (pass % 7) * 4096, 1 << 20);
    plan.Add(1, weights.data() + (4 << 20), 1 << 20);
    const std::int64_t n = 1 + pass % 9;
    std::vector<std::atomic<int>> hits(n);
    pool.ForEachChunk(
        n,
        [&](std::int64_t c) {
          volatile double s = 0;  // some work, so one thread often waits for the other
          for (int i = 0; i < 2000 * static_cast<int>(c % 3); ++i) s = s + i;
          hits[c].fetch_add(1);
        },
        &plan);
    for (std::int64_t c = 0; c < n; ++c) ASSERT_EQ(hits[c].load(), 1) << "pass " << pass << " chunk " << c;
  }
}

TEST(ThreadPool, CurrentLaneIsZeroForTheCallerAndTheIndexForAWorker) {
  EXPECT_EQ(ThreadPool::CurrentLane(), -1);  // not in a pass
  ThreadPool pool(3);
  for (int rep = 0; rep < 50; ++rep) {
    std::mutex mu;
    std::set<int> lanes;
    bool caller_is_zero = true;
    const auto caller = std::this_thread::get_id();
    pool.ForEachChunk(64, [&](std::int64_t) {
      const int lane = ThreadPool::CurrentLane();
      std::lock_guard<std::mutex> lock(mu);
      lanes.insert(lane);
      if (std::this_thread::get_id() == caller && lane != 0) caller_is_zero = false;
    });
    EXPECT_TRUE(caller_is_zero);
    for (int lane : lanes) {
      EXPECT_GE(lane, 0);
      EXPECT_LT(lane, 3);
    }
  }
  EXPECT_EQ(ThreadPool::CurrentLane(), -1);
  // A pool of one runs inline: not a pass of a pool with several threads.
  ThreadPool one(1);
  int seen = 0;
  one.ForEachChunk(4, [&](std::int64_t) { seen = ThreadPool::CurrentLane(); });
  EXPECT_EQ(seen, -1);
}

// With pool threads LaneClaims gives each its CurrentLane()'s lane first, so a plan made for
// lane k is read by the thread that prefetched it.
TEST(LaneClaims, APoolThreadStartsOnItsPoolLane) {
  ThreadPool pool(2);
  for (std::int64_t n : {2, 8, 64, 333}) {
    for (int rep = 0; rep < 20; ++rep) {
      LaneClaims claims(n, pool.size());
      std::mutex mu;
      std::vector<std::int64_t> first(2, -1);
      pool.ForEachChunk(n, [&](std::int64_t) {
        const std::int64_t c = claims.Next();
        const int lane = ThreadPool::CurrentLane();
        std::lock_guard<std::mutex> lock(mu);
        if (first[lane] < 0) first[lane] = c;
      });
      // A thread leaves its lane only once it is done, so the first chunk a thread gets (if the
      // other one did not take them all) is one of its own lane's.
      EXPECT_TRUE(first[0] >= 0 || first[1] >= 0);
      for (int lane = 0; lane < 2; ++lane) {
        if (first[lane] < 0) continue;
        const auto [b, e] = ThreadPool::SplitRange(n, lane, 2);
        EXPECT_GE(first[lane], b) << "n " << n << " lane " << lane;
        EXPECT_LT(first[lane], e) << "n " << n << " lane " << lane;
      }
    }
  }
}

}  // namespace
}  // namespace smartgen::core
