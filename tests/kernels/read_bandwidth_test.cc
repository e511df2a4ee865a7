// The read-bandwidth probe: StreamSum against a scalar sum, and a probe that samples a buffer
// repeatedly on a pool and alone. (How fast is a benchmark's question, not a test's.)
#include "kernels/read_bandwidth.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/thread_pool.h"

namespace smartgen::kernels {
namespace {

TEST(ReadBandwidth, StreamSumIsTheSum) {
  constexpr std::size_t kN = 64 * 40;
  alignas(64) static float buf[kN];  // StreamSum loads aligned 64-byte vectors
  double want = 0;
  for (std::size_t i = 0; i < kN; ++i) {
    buf[i] = static_cast<float>(i % 7) - 3.0f;
    want += buf[i];
  }
  EXPECT_NEAR(StreamSum(buf, kN), want, 1e-3);
}

TEST(ReadBandwidth, AProbeSamplesItsBufferAgainAndAgain) {
  core::ThreadPool pool(2);
  ReadBandwidthProbe probe(&pool, std::size_t{4} << 20);
  for (int i = 0; i < 3; ++i) {
    const double gbs = probe.Sample(2);
    EXPECT_TRUE(std::isfinite(gbs));
    EXPECT_GT(gbs, 0.0);
  }
  ReadBandwidthProbe alone(nullptr, 1);  // rounds up to one 1 MiB chunk
  EXPECT_GT(alone.Sample(), 0.0);
  EXPECT_GT(MeasureReadBandwidth(&pool, std::size_t{2} << 20, 1), 0.0);
}

}  // namespace
}  // namespace smartgen::kernels
