#include "core/lane_claims.h"

#include <algorithm>
#include <latch>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/thread_pool.h"

namespace smartgen::core {
namespace {

TEST(LaneClaims, AThreadAloneTakesEveryChunkInOrder) {
  for (int lanes = 1; lanes <= 5; ++lanes) {
    for (std::int64_t n = 0; n <= 23; ++n) {
      LaneClaims claims(n, lanes);
      std::vector<std::int64_t> got;
      for (std::int64_t c = claims.Next(); c >= 0; c = claims.Next()) got.push_back(c);
      std::vector<std::int64_t> want(n);
      std::iota(want.begin(), want.end(), 0);
      EXPECT_EQ(got, want) << "lanes " << lanes << " n " << n;
    }
  }
}

TEST(LaneClaims, ThreadsStartOnTheirOwnLanesAndShareOutEveryChunkOnce) {
  constexpr std::int64_t n = 4000;
  constexpr int kThreads = 4;
  LaneClaims claims(n, kThreads);
  std::vector<std::vector<std::int64_t>> got(kThreads);
  std::vector<std::thread> threads;
  // Every thread makes its first claim before any makes a second: a thread started late would
  // otherwise find its lane begun by one that had already finished its own.
  std::latch first_claims(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::int64_t c = claims.Next();
      first_claims.arrive_and_wait();
      for (; c >= 0; c = claims.Next()) got[t].push_back(c);
    });
  }
  for (auto& th : threads) th.join();
  std::vector<int> hits(n, 0);
  for (int t = 0; t < kThreads; ++t) {
    for (std::int64_t c : got[t]) ++hits[c];
    // Each thread's first claim opens a lane (SplitRange's start), and its claims within that
    // lane come in increasing order.
    if (got[t].empty()) continue;
    const std::int64_t first = got[t].front();
    int lane = -1;
    for (int l = 0; l < kThreads; ++l) {
      if (ThreadPool::SplitRange(n, l, kThreads).first == first) lane = l;
    }
    EXPECT_GE(lane, 0) << "thread " << t << " began at chunk " << first;
    if (lane < 0) continue;
    const auto [b, e] = ThreadPool::SplitRange(n, lane, kThreads);
    std::int64_t last = -1;
    for (std::int64_t c : got[t]) {
      if (c < b || c >= e) continue;
      EXPECT_GT(c, last);
      last = c;
    }
  }
  for (std::int64_t c = 0; c < n; ++c) EXPECT_EQ(hits[c], 1) << "chunk " << c;
}

TEST(LaneClaims, OwnLaneRunsUpToTheirLengthAndOthersOneAtATime) {
  for (const std::int64_t own_run : {1, 5, 15, 32, 40}) {
    LaneClaims claims(64, 2);  // a thread outside a pool: lane 0, the first to arrive
    std::vector<std::int64_t> lane0;
    std::int64_t next = 0;
    for (LaneClaims::Run r = claims.NextRun(own_run); r.count > 0; r = claims.NextRun(own_run)) {
      EXPECT_EQ(r.first, next) << "own run " << own_run;
      next = r.first + r.count;
      if (r.first < 32) {
        lane0.push_back(r.count);
      } else {
        EXPECT_EQ(r.count, 1) << "chunk " << r.first << " of the other lane";
      }
    }
    EXPECT_EQ(next, 64);
    // Runs of own_run through lane 0 ([0, 32)), the last one what is left.
    std::vector<std::int64_t> want(32 / own_run, own_run);
    if (32 % own_run != 0) want.push_back(32 % own_run);
    EXPECT_EQ(lane0, want) << "own run " << own_run;
    EXPECT_EQ(claims.NextRun(own_run).count, 0);
  }
}

TEST(LaneClaims, RunsOfThreadsOnEveryLaneShareOutEveryChunkOnce) {
  ThreadPool pool(3);
  for (std::int64_t n : {1, 5, 48, 1000}) {
    for (const std::int64_t own_run : {1, 3, 15, 1000}) {
      LaneClaims claims(n, pool.size());
      std::vector<int> hits(n, 0);
      std::mutex mu;
      pool.Run([&](int, int) {
        for (LaneClaims::Run r = claims.NextRun(own_run); r.count > 0;
             r = claims.NextRun(own_run)) {
          std::lock_guard<std::mutex> lock(mu);
          // A run lies inside one lane.
          int lane = 0;
          while (ThreadPool::SplitRange(n, lane, pool.size()).second <= r.first) ++lane;
          EXPECT_LE(r.first + r.count, ThreadPool::SplitRange(n, lane, pool.size()).second);
          for (std::int64_t c = r.first; c < r.first + r.count; ++c) ++hits[c];
        }
      });
      for (std::int64_t c = 0; c < n; ++c) {
        EXPECT_EQ(hits[c], 1) << "n " << n << " own run " << own_run << " chunk " << c;
      }
    }
  }
}

TEST(LaneClaims, EveryPoolCallOfAPassGetsAChunk) {
  ThreadPool pool(3);
  for (std::int64_t n : {1, 2, 7, 64, 1000}) {
    LaneClaims claims(n, pool.size());
    std::vector<int> hits(n, 0);
    std::mutex mu;
    int misses = 0;
    pool.ForEachChunk(n, [&](std::int64_t) {
      const std::int64_t c = claims.Next();
      std::lock_guard<std::mutex> lock(mu);
      if (c < 0) {
        ++misses;
      } else {
        ++hits[c];
      }
    });
    EXPECT_EQ(misses, 0) << "n " << n;
    for (std::int64_t c = 0; c < n; ++c) EXPECT_EQ(hits[c], 1) << "n " << n << " chunk " << c;
  }
}

}  // namespace
}  // namespace smartgen::core
