#include "core/thread_pool.h"

#include <atomic>
#include <numeric>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace smartgen::core {
namespace {

TEST(ThreadPool, RunCallsEveryShareOnce) {
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

TEST(ThreadPool, ForEachChunkRunsEveryChunkOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    // 70000 chunks need two jobs of at most 65535 chunks each.
    for (std::int64_t n : {0, 1, 2, 5, 63, 1000, 70000}) {
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
      pool.ForEachChunk(n, [&](std::int64_t c) { hits[static_cast<std::size_t>(c)].fetch_add(1); });
      for (std::int64_t c = 0; c < n; ++c) {
        ASSERT_EQ(hits[static_cast<std::size_t>(c)].load(), 1) << "threads " << threads << " n " << n;
      }
    }
  }
}

TEST(ThreadPool, ManySmallJobsOnAnOversubscribedPool) {
  // More threads than cores: workers are often not scheduled when a job starts, so callers
  // finish most jobs alone; every chunk must still run exactly once per job.
  ThreadPool pool(8);
  long sum = 0;
  for (int round = 0; round < 2000; ++round) {
    std::atomic<long> job_sum{0};
    pool.ForEachChunk(round % 7 + 1, [&](std::int64_t c) { job_sum.fetch_add(c + 1); });
    sum += job_sum.load();
  }
  long want = 0;
  for (int round = 0; round < 2000; ++round) want += (round % 7 + 1) * (round % 7 + 2) / 2;
  EXPECT_EQ(sum, want);
}

TEST(ThreadPool, ParallelForChunksRespectGrain) {
  ThreadPool pool(2);
  EXPECT_EQ(pool.ChunkCount(1, 1), 1);
  EXPECT_EQ(pool.ChunkCount(100, 1), 2 * ThreadPool::kChunksPerThread);
  EXPECT_EQ(pool.ChunkCount(100, 40), 2);
  EXPECT_EQ(pool.ChunkCount(100, 200), 1);
  ThreadPool one(1);
  EXPECT_EQ(one.ChunkCount(100, 1), 1);
  std::atomic<int> calls{0};
  pool.ParallelFor(100, [&](std::int64_t b, std::int64_t e) {
    EXPECT_GE(e - b, 40);
    calls.fetch_add(1);
  }, 40);
  EXPECT_EQ(calls.load(), 2);
}

TEST(ThreadPool, CallerNeverWaitsForABusyPool) {
  // Thread a's job occupies the pool (both of its chunks wait for `release`); a second caller
  // must run its own chunks inline and finish, or this test would deadlock.
  ThreadPool pool(2);
  std::atomic<bool> release{false};
  std::atomic<int> started{0};
  std::thread a([&] {
    pool.ForEachChunk(2, [&](std::int64_t) {
      started.fetch_add(1);
      while (!release.load()) std::this_thread::yield();
    });
  });
  while (started.load() == 0) std::this_thread::yield();
  std::vector<int> hits(10, 0);
  pool.ForEachChunk(10, [&](std::int64_t c) { hits[static_cast<std::size_t>(c)]++; });
  EXPECT_EQ(hits, std::vector<int>(10, 1));
  release.store(true);
  a.join();
}

TEST(ThreadPool, NestedChunksRunInline) {
  ThreadPool pool(2);
  std::atomic<int> inner{0};
  pool.ForEachChunk(4, [&](std::int64_t) {
    EXPECT_EQ(pool.ChunkCount(100, 1), 1);
    pool.ParallelFor(100, [&](std::int64_t b, std::int64_t e) {
      EXPECT_EQ(b, 0);
      EXPECT_EQ(e, 100);
      inner.fetch_add(1);
    });
  });
  EXPECT_EQ(inner.load(), 4);
}

TEST(ThreadPool, ConcurrentCallersEachCoverTheirRange) {
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
