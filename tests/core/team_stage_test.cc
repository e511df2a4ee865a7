// core::TeamStage: the items of each stage of a pool job are claimed once each, a thread that
// waits for a stage sees every write its items made, empty stages are done at once, a thread's
// finished items (one at a time or a run at once) count once its Next() has come back empty, and
// a wait outlasts a late item (past the spin, on the futex) without missing its end.
#include "core/team_stage.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

namespace smartgen::core {
namespace {

TEST(TeamStage, EachItemOnceAndAWaiterSeesEveryWrite) {
  for (const int threads : {2, 3}) {
    ThreadPool pool(threads);
    constexpr int kStages = 300;
    auto stages = std::make_unique<TeamStage[]>(kStages);
    std::vector<std::vector<int>> values(kStages);
    std::vector<std::unique_ptr<std::atomic<int>[]>> claims(kStages);
    for (int s = 0; s < kStages; ++s) {
      const int n = s % 9;  // 0 included
      stages[s].Reset(n, threads);
      values[s].assign(n, -1);
      claims[s] = std::make_unique<std::atomic<int>[]>(n + 1);
    }
    std::atomic<int> stale{0};
    pool.Run([&](int, int) {
      for (int s = 0; s < kStages; ++s) {
        for (std::int64_t i = stages[s].Next(); i >= 0; i = stages[s].Next()) {
          claims[s][i].fetch_add(1);
          values[s][i] = s * 1000 + static_cast<int>(i);  // plain writes, released by Finish
          stages[s].Finish();
        }
        stages[s].Wait(nullptr);
        for (std::size_t i = 0; i < values[s].size(); ++i) {
          if (values[s][i] != s * 1000 + static_cast<int>(i)) stale.fetch_add(1);
        }
      }
    });
    EXPECT_EQ(stale.load(), 0) << threads << " threads";
    for (int s = 0; s < kStages; ++s) {
      EXPECT_TRUE(stages[s].Done());
      for (int i = 0; i < s % 9; ++i) EXPECT_EQ(claims[s][i].load(), 1) << "stage " << s << " item " << i;
    }
  }
}

TEST(TeamStage, AnEmptyStageIsDoneAndHasNothingToClaim) {
  TeamStage stage;
  stage.Reset(0, 2);
  EXPECT_TRUE(stage.Done());
  EXPECT_EQ(stage.Next(), -1);
  stage.Wait(nullptr);  // returns at once
}

TEST(TeamStage, AThreadAloneTakesEveryItem) {
  TeamStage stage;
  stage.Reset(5, 3);  // lanes for three threads, one comes
  std::vector<int> seen;
  for (std::int64_t i = stage.Next(); i >= 0; i = stage.Next()) {
    seen.push_back(static_cast<int>(i));
    stage.Finish();
  }
  EXPECT_EQ(seen.size(), 5u);
  EXPECT_TRUE(stage.Done());
}

TEST(TeamStage, RunsFinishedAtOnceCountEveryItem) {
  ThreadPool pool(2);
  for (int round = 0; round < 20; ++round) {
    TeamStage stage;
    stage.Reset(100, 2);
    std::vector<std::atomic<int>> hits(100);
    pool.Run([&](int, int) {
      for (LaneClaims::Run r = stage.NextRun(15); r.count > 0; r = stage.NextRun(15)) {
        for (std::int64_t i = r.first; i < r.first + r.count; ++i) hits[i].fetch_add(1);
        stage.Finish(static_cast<std::uint32_t>(r.count));
      }
      stage.Wait(nullptr);
    });
    EXPECT_TRUE(stage.Done());
    for (int i = 0; i < 100; ++i) EXPECT_EQ(hits[i].load(), 1) << "item " << i;
  }
}

TEST(TeamStage, FinishedItemsCountWhenTheirThreadFindsNothingLeft) {
  const auto take_all = [](TeamStage& stage) {
    for (int i = 0; i < 3; ++i) {
      ASSERT_GE(stage.Next(), 0);
      stage.Finish();
    }
    EXPECT_FALSE(stage.Done());  // finished, not yet counted
    EXPECT_EQ(stage.Next(), -1);
    EXPECT_TRUE(stage.Done());
    EXPECT_EQ(stage.Next(), -1);  // again: nothing counted twice
    EXPECT_TRUE(stage.Done());
  };
  TeamStage outside;  // a thread outside any pool pass
  outside.Reset(3, 2);
  take_all(outside);
  ThreadPool pool(2);
  for (int round = 0; round < 20; ++round) {  // whichever lane of the pool comes first
    TeamStage stage;
    stage.Reset(3, 2);
    std::atomic<bool> taken{false};
    pool.Run([&](int, int) {
      if (!taken.exchange(true)) take_all(stage);
    });
  }
}

TEST(TeamStage, WaitOutlastsALateItemPastTheSpin) {
  TeamStage stage;
  stage.Reset(2, 2);
  std::atomic<bool> claimed{false}, finished{false};
  std::thread late([&] {
    EXPECT_GE(stage.Next(), 0);
    claimed.store(true);
    // Well past ThreadPool::kSpinMicros: the waiter has gone to sleep on the count.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    finished.store(true);
    stage.Finish();
    EXPECT_EQ(stage.Next(), -1);  // counts the item, wakes the waiter
  });
  while (!claimed.load()) std::this_thread::yield();
  ASSERT_GE(stage.Next(), 0);
  stage.Finish();
  EXPECT_EQ(stage.Next(), -1);
  stage.Wait(nullptr);
  EXPECT_TRUE(finished.load());
  EXPECT_TRUE(stage.Done());
  late.join();
}

}  // namespace
}  // namespace smartgen::core
