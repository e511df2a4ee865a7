// The token bucket, driven by a ManualClock: exact, no wall-clock timing.
#include "transfer/rate_limiter.h"
#include "transfer/link_estimator.h"

#include <gtest/gtest.h>

#include <random>

namespace smartgen::transfer {
namespace {

using core::ManualClock;
using core::Nanos;

TEST(RateLimiter, UnlimitedNeverWaits) {
  ManualClock clock(1000);
  RateLimiter limiter(0, 0, clock);
  EXPECT_TRUE(limiter.unlimited());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(limiter.Reserve(1 << 30), 1000);
}

TEST(RateLimiter, DefaultBucketIsFiveMillisecondsOrSixtyFourKiB) {
  ManualClock clock;
  EXPECT_EQ(RateLimiter(100e6, 0, clock).burst_bytes(), 64u * 1024);
  EXPECT_EQ(RateLimiter(10e9, 0, clock).burst_bytes(), 6'250'000u);
}

TEST(RateLimiter, BurstGoesAtOnceThenTheRate) {
  ManualClock clock(0);
  RateLimiter limiter(8e6, 64 * 1024, clock);  // 1 MB/s
  EXPECT_EQ(limiter.Reserve(64 * 1024), 0);    // the full bucket
  EXPECT_EQ(limiter.Reserve(1000), core::Millis(1));  // 1000 B at 1 MB/s
  EXPECT_EQ(limiter.Reserve(1000), core::Millis(2));  // queued behind the first
  clock.Set(core::Millis(2));
  EXPECT_NEAR(limiter.Available(), 0.0, 1e-6);
  clock.Set(core::Seconds(10));
  EXPECT_DOUBLE_EQ(limiter.Available(), 64.0 * 1024);  // refills to the bucket, no more
}

// A sender that reserves frames back to back and sends each when allowed (waking from a
// sleep up to `oversleep_max` late, like a loaded machine). Checks the two promises over the whole run and every prefix:
// achieved >= 99.9% of the rate, and never more than rate * t + one bucket.
void Simulate(double bits_per_second, std::uint64_t frame, Nanos oversleep_max,
              Nanos duration) {
  ManualClock clock(0);
  RateLimiter limiter(bits_per_second, 0, clock);
  const double rate = bits_per_second / 8;
  const double bucket = static_cast<double>(limiter.burst_bytes());
  std::mt19937_64 rng(42);
  std::uint64_t sent = 0;
  Nanos now = 0;
  while (now < duration) {
    const Nanos at = limiter.Reserve(frame);
    if (at > now) {  // the sender sleeps, and may wake late
      const Nanos late = oversleep_max > 0 ? static_cast<Nanos>(rng() % oversleep_max) : 0;
      now = at + late;
    }
    clock.Set(now);
    sent += frame;
    ASSERT_LE(static_cast<double>(sent), rate * core::ToSeconds(now) + bucket + 1)
        << "above the rate by more than a bucket at t=" << core::ToSeconds(now);
  }
  const double achieved = sent / core::ToSeconds(now);
  EXPECT_GE(achieved, 0.999 * rate) << "achieved " << achieved * 8 / 1e6 << " Mbit/s";
  EXPECT_LE(achieved, rate + bucket / core::ToSeconds(now));
}

TEST(RateLimiter, HundredMegabitIsExactOverTime) {
  Simulate(100e6, 16 * 1024, 0, core::Seconds(10));
}

TEST(RateLimiter, OneGigabitIsExactOverTime) { Simulate(1e9, 256 * 1024, 0, core::Seconds(10)); }

TEST(RateLimiter, LateWakeupsDoNotLoseRate) {
  // Quarter-bucket frames (156 KB at 1 Gbit/s) sent up to 3 ms late lose nothing: the bucket
  // (5 ms) keeps the tokens that piled up meanwhile.
  Simulate(1e9, 156'000, core::Millis(3), core::Seconds(10));
}

TEST(RateLimiter, FramesLargerThanTheBucketStillPass) {
  ManualClock clock(0);
  RateLimiter limiter(8e6, 64 * 1024, clock);
  EXPECT_EQ(limiter.Reserve(64 * 1024 + 1'000'000), core::Seconds(1));
}

TEST(LinkEstimator, MeasuresTheRateOfBackloggedFramesAndForgetsOldOnes) {
  LinkEstimator e;
  EXPECT_EQ(e.bytes_per_second(), 0.0);
  for (int i = 0; i < 10; ++i) e.AddBacklogged(16 * 1024, core::Millis(16));  // 1 MB/s, 160 KB
  EXPECT_EQ(e.bytes_per_second(), 0.0) << "too little seen yet";
  for (int i = 0; i < 40; ++i) e.AddBacklogged(16 * 1024, core::Millis(16));
  EXPECT_NEAR(e.bytes_per_second(), 1024e3, 1.0);
  // The link gets 4x faster: the estimate follows within a few hundred frames.
  for (int i = 0; i < 400; ++i) e.AddBacklogged(16 * 1024, core::Millis(4));
  EXPECT_NEAR(e.bytes_per_second(), 4096e3, 0.01 * 4096e3);
}

}  // namespace
}  // namespace smartgen::transfer
