#include "core/thread_pool.h"

#include <atomic>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

namespace smartgen::core {
namespace {

TEST(ThreadPool, RunCallsEveryThreadOnce) {
  for (int n : {1, 2, 3, 4}) {
    ThreadPool pool(n);
    std::vector<std::atomic<int>> calls(n);
    for (int round = 0; round < 100; ++round) {
      pool.Run([&](int t, int nt) {
        ASSERT_EQ(nt, n);
        calls[t].fetch_add(1);
      });
    }
    for (int t = 0; t < n; ++t) EXPECT_EQ(calls[t].load(), 100) << "thread " << t;
  }
}

TEST(ThreadPool, ParallelForCoversRangeExactlyOnce) {
  ThreadPool pool(3);
  for (std::int64_t n : {0, 1, 2, 7, 1000}) {
    std::vector<int> hits(n, 0);
    pool.ParallelFor(n, [&](std::int64_t b, std::int64_t e) {
      for (auto i = b; i < e; ++i) hits[i]++;
    });
    for (std::int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i], 1) << "n=" << n << " i=" << i;
  }
}

TEST(ThreadPool, SplitRangeIsContiguousAndBalanced) {
  std::int64_t next = 0;
  for (int t = 0; t < 4; ++t) {
    auto [b, e] = ThreadPool::SplitRange(10, t, 4);
    EXPECT_EQ(b, next);
    EXPECT_TRUE(e - b == 2 || e - b == 3);
    next = e;
  }
  EXPECT_EQ(next, 10);
}

TEST(ThreadPool, NestedRunExecutesInline) {
  ThreadPool pool(2);
  std::atomic<int> inner{0};
  pool.Run([&](int, int) {
    pool.Run([&](int t, int nt) {
      EXPECT_EQ(t, 0);
      EXPECT_EQ(nt, 1);
      inner.fetch_add(1);
    });
  });
  EXPECT_EQ(inner.load(), 2);
}

TEST(ThreadPool, ConcurrentCallersAreSerialised) {
  ThreadPool pool(2);
  std::atomic<long> sum{0};
  auto caller = [&] {
    for (int i = 0; i < 200; ++i) pool.ParallelFor(10, [&](auto b, auto e) { sum += e - b; });
  };
  std::thread a(caller), b(caller);
  a.join();
  b.join();
  EXPECT_EQ(sum.load(), 2 * 200 * 10);
}

}  // namespace
}  // namespace smartgen::core
