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
