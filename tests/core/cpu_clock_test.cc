#include "core/cpu_clock.h"

#include <gtest/gtest.h>

#include <chrono>

#include "core/cpu_placement.h"

namespace smartgen::core {
namespace {

TEST(CpuClock, EveryAllowedCpuGetsAPlausibleClock) {
  const Result<std::vector<int>> cpus = AllowedCpus();
  if (!cpus.ok()) GTEST_SKIP() << "no CPU placement here: " << cpus.status().ToString();
  const Result<std::vector<CpuClock>> clocks = MeasureCpuClocks(std::chrono::milliseconds(2));
  ASSERT_TRUE(clocks.ok()) << clocks.status().ToString();
  ASSERT_EQ(clocks->size(), cpus->size());
  for (std::size_t i = 0; i < clocks->size(); ++i) {
    EXPECT_EQ((*clocks)[i].cpu, (*cpus)[i]);
    // A dependent add a cycle: between a slow, heavily shared vCPU (sanitizer builds included)
    // and any clock a CPU runs at.
    EXPECT_GT((*clocks)[i].ghz, 0.01) << "cpu " << (*clocks)[i].cpu;
    EXPECT_LT((*clocks)[i].ghz, 10.0) << "cpu " << (*clocks)[i].cpu;
  }
}

TEST(CpuClock, FormatsOneEntryPerCpu) {
  EXPECT_EQ(FormatCpuClocks({{0, 3.594}, {1, 2.2}}), "0 3.59, 1 2.20 GHz");
  EXPECT_EQ(FormatCpuClocks({{7, 1.0}}), "7 1.00 GHz");
  EXPECT_EQ(FormatCpuClocks({}), "none");
}

}  // namespace
}  // namespace smartgen::core
