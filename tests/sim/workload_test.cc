#include "sim/workload.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace smartgen::sim {
namespace {

TEST(SimWorkload, PoissonHasTheRequestedRate) {
  WorkloadOptions o;
  const auto w = Poisson(4.0, 20000, o);
  ASSERT_EQ(w.size(), 20000u);
  for (std::size_t i = 1; i < w.size(); ++i) ASSERT_GE(w[i].arrival, w[i - 1].arrival);
  const double rate = static_cast<double>(w.size()) / w.back().arrival;
  EXPECT_NEAR(rate, 4.0, 0.12);
  // Same seed, same arrivals.
  EXPECT_EQ(Poisson(4.0, 10, o)[9].arrival, Poisson(4.0, 10, o)[9].arrival);
}

TEST(SimWorkload, FixedBatchDrawsLengthsInRange) {
  WorkloadOptions o;
  o.prompt_min = 100;
  o.prompt_max = 200;
  const auto w = FixedBatch(50, 0.5, o);
  ASSERT_EQ(w.size(), 50u);
  EXPECT_DOUBLE_EQ(w[3].arrival, 1.5);
  bool varied = false;
  for (const RequestSpec& r : w) {
    EXPECT_GE(r.prompt_tokens, 100);
    EXPECT_LE(r.prompt_tokens, 200);
    varied |= r.prompt_tokens != w[0].prompt_tokens;
  }
  EXPECT_TRUE(varied);
}

TEST(SimWorkload, TraceFileIsParsedAndSorted) {
  const std::string path = (std::filesystem::path(::testing::TempDir()) / "sim_trace.txt").string();
  {
    std::ofstream f(path);
    f << "# arrival prompt output\n2.5 4096 64\n\n0.5, 1024, 16  # comment\n";
  }
  auto w = ReadTrace(path);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_EQ(w->size(), 2u);
  EXPECT_DOUBLE_EQ((*w)[0].arrival, 0.5);
  EXPECT_EQ((*w)[0].prompt_tokens, 1024);
  EXPECT_EQ((*w)[1].output_tokens, 64);
  {
    std::ofstream f(path);
    f << "1.0 4096\n";
  }
  auto bad = ReadTrace(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(":1:"), std::string::npos);
  EXPECT_EQ(ReadTrace(path + ".missing").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace smartgen::sim
