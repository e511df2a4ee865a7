#include "core/cpu_placement.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/thread_pool.h"

namespace smartgen::core {
namespace {

// AllowedCpus() reads the calling thread's mask.
std::vector<int> MyCpus() {
  Result<std::vector<int>> cpus = AllowedCpus();
  EXPECT_TRUE(cpus.ok()) << cpus.status().ToString();
  return cpus.ok() ? *cpus : std::vector<int>{};
}

TEST(CpuPlacement, ParsesAndFormatsListsAsTasksetWritesThem) {
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 8}), "0-3,8");
  EXPECT_EQ(FormatCpuList({5, 1, 2}), "1-2,5");
  EXPECT_EQ(FormatCpuList({7}), "7");
  const std::vector<int> allowed = MyCpus();
  ASSERT_FALSE(allowed.empty());
  Result<std::vector<int>> all = ParseCpuList(FormatCpuList(allowed));
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(*all, allowed);
  if (allowed.size() >= 2) {
    // The order given is the lanes' order.
    Result<std::vector<int>> two = ParseCpuList(fmt::format("{},{}", allowed[1], allowed[0]));
    ASSERT_TRUE(two.ok()) << two.status().ToString();
    EXPECT_EQ(*two, (std::vector<int>{allowed[1], allowed[0]}));
  }
}

TEST(CpuPlacement, RefusesMalformedListsAndCpusThisProcessMayNotUse) {
  for (const char* bad : {"", ",", "0,", ",0", "1-0", "0,0", "0-1,1", "a", "-1", "0-", "-", " 0",
                          "0 ", "0x1", "99999999", "2000", "0-2000"}) {
    Result<std::vector<int>> r = ParseCpuList(bad);
    ASSERT_FALSE(r.ok()) << "'" << bad << "' parsed";
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  const std::vector<int> allowed = MyCpus();
  int outside = 0;
  while (outside < 1024 && std::find(allowed.begin(), allowed.end(), outside) != allowed.end()) ++outside;
  ASSERT_LT(outside, 1024);
  Result<std::vector<int>> r = ParseCpuList(std::to_string(outside));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("may not run on CPU"), std::string_view::npos) << r.status().ToString();
}

TEST(CpuPlacement, ThreadsMadeLaterGetTheProcessSetNotTheirCreatorsPin) {
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer's pthread_create replaces a null attribute with a fresh one, so its threads
  // inherit their creator's mask and not the default attributes' (the property tested here).
  GTEST_SKIP() << "not observable under ThreadSanitizer";
#endif
  const std::vector<int> allowed = MyCpus();
  if (allowed.size() < 2) GTEST_SKIP() << "needs two CPUs, this process has " << allowed.size();
  const std::vector<int> set = {allowed[0], allowed[1]};
  std::vector<int> placed, pinned, child;
  std::thread helper([&] {
    ASSERT_TRUE(PlaceProcessOn(set).ok());
    placed = MyCpus();
    ASSERT_TRUE(PinThisThreadTo(set[1]).ok());
    pinned = MyCpus();
    std::thread made_later([&] { child = MyCpus(); });
    made_later.join();
  });
  helper.join();
  ASSERT_TRUE(PlaceProcessOn(allowed).ok());  // as it was, for the tests after this one
  EXPECT_EQ(placed, set);
  EXPECT_EQ(pinned, std::vector<int>{set[1]});
  EXPECT_EQ(child, set);
  EXPECT_EQ(MyCpus(), allowed);  // the test's own thread was never placed
}

TEST(CpuPlacement, PoolPinsEachLaneToItsCpu) {
  const std::vector<int> allowed = MyCpus();
  if (allowed.size() < 2) GTEST_SKIP() << "needs two CPUs, this process has " << allowed.size();
  const std::vector<int> cpus = {allowed[1], allowed[0]};
  std::mutex mu;
  std::vector<std::vector<int>> lane_cpus(2);
  bool both_ran = true;
  // Runs the pool from a thread of its own: the pool pins whichever thread drives lane 0.
  std::thread driver([&] {
    Result<std::unique_ptr<ThreadPool>> pool = ThreadPool::Create(2, cpus);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    EXPECT_EQ((*pool)->cpus(), cpus);
    std::atomic<int> started{0};
    (*pool)->ForEachChunk(2, [&](std::int64_t) {
      started.fetch_add(1);
      // Each chunk waits for the other, so the two run at once, one on each lane.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (started.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
      std::lock_guard<std::mutex> lock(mu);
      if (started.load() < 2) both_ran = false;
      lane_cpus[static_cast<std::size_t>(ThreadPool::CurrentLane())] = MyCpus();
    });
  });
  driver.join();
  ASSERT_TRUE(both_ran) << "the second lane never started within 10 s";
  EXPECT_EQ(lane_cpus[0], std::vector<int>{cpus[0]});
  EXPECT_EQ(lane_cpus[1], std::vector<int>{cpus[1]});
  EXPECT_EQ(MyCpus(), allowed);
}

TEST(CpuPlacement, PoolRefusesFewerCpusThanThreads) {
  const std::vector<int> allowed = MyCpus();
  ASSERT_FALSE(allowed.empty());
  Result<std::unique_ptr<ThreadPool>> pool = ThreadPool::Create(3, {allowed[0]});
  ASSERT_FALSE(pool.ok());
  EXPECT_EQ(pool.status().code(), StatusCode::kInvalidArgument);
  Result<std::unique_ptr<ThreadPool>> unplaced = ThreadPool::Create(2, {});
  ASSERT_TRUE(unplaced.ok());
  EXPECT_TRUE((*unplaced)->cpus().empty());
}

}  // namespace
}  // namespace smartgen::core
