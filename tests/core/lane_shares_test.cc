#include "core/lane_shares.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#include "core/lane_claims.h"
#include "core/thread_pool.h"

namespace smartgen::core {
namespace {

// Lane l's thread waited waits[l] microseconds of a 1000-microsecond step, `steps` times.
void LearnSteps(LaneShares& shares, std::vector<Nanos> waits_us, int steps) {
  for (Nanos& w : waits_us) w *= kNanosPerMicro;
  for (int i = 0; i < steps; ++i) shares.Learn(waits_us, 1000 * kNanosPerMicro);
}

// The lanes' ranges of n items tile [0, n) in lane order.
void ExpectTiles(const LaneShares& shares, std::int64_t n) {
  std::int64_t at = 0;
  for (int l = 0; l < shares.lanes(); ++l) {
    const auto [b, e] = shares.Range(n, l);
    EXPECT_EQ(b, at) << "lane " << l << " of n " << n;
    EXPECT_LE(b, e) << "lane " << l << " of n " << n;
    at = e;
  }
  EXPECT_EQ(at, n);
}

TEST(LaneShares, EvenSharesSplitAsThePoolDoes) {
  for (int lanes = 1; lanes <= 5; ++lanes) {
    LaneShares shares;
    shares.Reset(lanes);
    for (std::int64_t n = 0; n <= 40; ++n) {
      for (int l = 0; l < lanes; ++l) {
        EXPECT_EQ(shares.Range(n, l), ThreadPool::SplitRange(n, l, lanes)) << n << " " << l;
      }
    }
  }
}

TEST(LaneShares, TheThreadThatWaitsGetsMoreOnceAWindowOfStepsAgrees) {
  LaneShares shares;
  shares.Reset(2);
  // Lane 1's thread waits 300 us of every 1000: it is faster, so its share grows, but only
  // after kWindow steps.
  LearnSteps(shares, {0, 300}, LaneShares::kWindow - 1);
  EXPECT_EQ(shares.Range(32, 1), ThreadPool::SplitRange(32, 1, 2));
  LearnSteps(shares, {0, 300}, 1);
  // Busy 1000 against 700 us for the same half: rates 1 : 1.43, so shares 0.41 : 0.59.
  EXPECT_NEAR(shares.share(1), 1000.0 / 1700.0, 1e-9);
  EXPECT_NEAR(shares.share(0) + shares.share(1), 1.0, 1e-12);
  EXPECT_EQ(shares.Range(32, 1), (std::pair<std::int64_t, std::int64_t>{13, 32}));
  for (std::int64_t n : {0, 1, 3, 18, 32, 1000}) ExpectTiles(shares, n);
  // Equal waits at these shares: the lanes are even as they are.
  LearnSteps(shares, {100, 100}, 2 * LaneShares::kWindow);
  EXPECT_NEAR(shares.share(1), 1000.0 / 1700.0, 1e-9);
  // The cores even out (each thread busy for its share of the pass at one rate): the shares
  // go back to half each within a window.
  for (int i = 0; i < LaneShares::kWindow; ++i) {
    // The step is the longer busy time, 1000 us; the other thread waits the difference.
    const double most = std::max(shares.share(0), shares.share(1));
    LearnSteps(shares,
               {std::llround(1000 - 1000 * shares.share(0) / most),
                std::llround(1000 - 1000 * shares.share(1) / most)},
               1);
  }
  EXPECT_NEAR(shares.share(0), 0.5, 0.01);
}

TEST(LaneShares, AFewStepsWithAStoppedThreadMoveNothing) {
  LaneShares shares;
  shares.Reset(2);
  LearnSteps(shares, {50, 50}, LaneShares::kWindow);
  const double before = shares.share(0);
  // Fewer than half a window of steps in which lane 0's thread waited 900 us of 1000.
  for (int i = 0; i < LaneShares::kWindow / 2 - 1; ++i) {
    LearnSteps(shares, {900, 0}, 1);
    LearnSteps(shares, {50, 50}, 1);
  }
  EXPECT_NEAR(shares.share(0), before, 1e-12);
}

TEST(LaneShares, SharesStayWithinTheirBoundsAndStepsWithoutTimesAreIgnored) {
  LaneShares shares;
  shares.Reset(3);
  LearnSteps(shares, {0, 990, 990}, 4 * LaneShares::kWindow);
  EXPECT_LE(shares.share(0), LaneShares::kMaxShare / 3 * 1.0001 + 1e-9);
  EXPECT_GE(shares.share(1), LaneShares::kMinShare / 3 * 0.9999 - 1e-9);
  for (std::int64_t n : {0, 2, 7, 96}) ExpectTiles(shares, n);
  const double share0 = shares.share(0);
  LearnSteps(shares, {1000, 0, 0}, 4 * LaneShares::kWindow);  // lane 0 busy for no time
  shares.Learn(std::vector<Nanos>{0, 0, 0}, 0);               // no step time
  shares.Learn(std::vector<Nanos>{0, 0}, 1000);               // too few lanes
  EXPECT_EQ(shares.share(0), share0);
  shares.Reset(3);
  for (int l = 0; l < 3; ++l) EXPECT_EQ(shares.Range(96, l), ThreadPool::SplitRange(96, l, 3));
}

TEST(LaneShares, ClaimsFollowTheSharesAndHandOutEveryChunkOnce) {
  LaneShares shares;
  shares.Reset(2);
  LearnSteps(shares, {0, 300}, LaneShares::kWindow);
  {
    // A thread alone (outside a pool: lane 0) runs its whole lane, then the other's one by one.
    LaneClaims claims(32, 2, &shares);
    const auto [b1, e1] = shares.Range(32, 1);
    ASSERT_EQ(b1, 13);
    const LaneClaims::Run own = claims.NextRun(1000);
    EXPECT_EQ(own.first, 0);
    EXPECT_EQ(own.count, b1);
    const LaneClaims::Run other = claims.NextRun(1000);
    EXPECT_EQ(other.first, b1);
    EXPECT_EQ(other.count, 1);
  }
  ThreadPool pool(2);
  for (std::int64_t n : {1, 18, 32, 1000}) {
    LaneClaims claims(n, 2, &shares);
    std::vector<int> hits(static_cast<std::size_t>(n), 0);
    std::mutex mu;
    pool.Run([&](int, int) {
      for (LaneClaims::Run r = claims.NextRun(8); r.count > 0; r = claims.NextRun(8)) {
        std::lock_guard<std::mutex> lock(mu);
        for (std::int64_t c = r.first; c < r.first + r.count; ++c)
          ++hits[static_cast<std::size_t>(c)];
      }
    });
    for (std::int64_t c = 0; c < n; ++c) {
      EXPECT_EQ(hits[static_cast<std::size_t>(c)], 1) << "n " << n << " chunk " << c;
    }
  }
}

}  // namespace
}  // namespace smartgen::core
