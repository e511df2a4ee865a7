#include "kernels/rope.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernel_test_util.h"

namespace smartgen::kernels {
namespace {

TEST(Rope, NormRotatesAdjacentPairs) {
  // head_dim 4, n_rot 4, base 100: theta_0 = pos, theta_1 = pos * 100^(-1/2) = pos / 10.
  RopeConfig c{.head_dim = 4, .n_rot = 4, .freq_base = 100.0f, .style = RopeStyle::kNorm};
  float x[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  Rope(c, x, 1, 3);
  const double t0 = 3.0, t1 = 0.3;
  EXPECT_NEAR(x[0], 1 * std::cos(t0) - 2 * std::sin(t0), 1e-6);
  EXPECT_NEAR(x[1], 1 * std::sin(t0) + 2 * std::cos(t0), 1e-6);
  EXPECT_NEAR(x[2], 3 * std::cos(t1) - 4 * std::sin(t1), 1e-6);
  EXPECT_NEAR(x[3], 3 * std::sin(t1) + 4 * std::cos(t1), 1e-6);
}

TEST(Rope, NeoxRotatesHalves) {
  RopeConfig c{.head_dim = 4, .n_rot = 4, .freq_base = 100.0f, .style = RopeStyle::kNeox};
  float x[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  Rope(c, x, 1, 3);
  const double t0 = 3.0, t1 = 0.3;
  // Pairs (x0, x2) with theta_0 and (x1, x3) with theta_1.
  EXPECT_NEAR(x[0], 1 * std::cos(t0) - 3 * std::sin(t0), 1e-6);
  EXPECT_NEAR(x[2], 1 * std::sin(t0) + 3 * std::cos(t0), 1e-6);
  EXPECT_NEAR(x[1], 2 * std::cos(t1) - 4 * std::sin(t1), 1e-6);
  EXPECT_NEAR(x[3], 2 * std::sin(t1) + 4 * std::cos(t1), 1e-6);
}

TEST(Rope, PartialRotationLeavesTailAndPositionZeroIsIdentity) {
  RopeConfig c{.head_dim = 8, .n_rot = 4, .freq_base = 10000.0f, .style = RopeStyle::kNorm};
  float x[16], orig[16];
  for (int i = 0; i < 16; ++i) x[i] = orig[i] = static_cast<float>(i + 1);
  Rope(c, x, 2, 0);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(x[i], orig[i]);
  Rope(c, x, 2, 5);
  for (int h = 0; h < 2; ++h) {
    for (int i = 4; i < 8; ++i) EXPECT_EQ(x[h * 8 + i], orig[h * 8 + i]);
    EXPECT_NE(x[h * 8], orig[h * 8]);
  }
}

TEST(Rope, PreservesPairNorms) {
  RopeConfig c{.head_dim = 64, .n_rot = 64, .freq_base = 10000.0f, .style = RopeStyle::kNeox};
  std::mt19937 rng(1);
  std::vector<float> x = testing::RandomVector(rng, 64), y = x;
  Rope(c, y.data(), 1, 1234);
  for (int i = 0; i < 32; ++i) {
    EXPECT_NEAR(std::hypot(y[i], y[i + 32]), std::hypot(x[i], x[i + 32]), 1e-5);
  }
}

TEST(Rope, EveryIsaMatchesReference) {
  std::mt19937 rng(2);
  for (RopeStyle style : {RopeStyle::kNorm, RopeStyle::kNeox}) {
    for (auto [hd, rot] : {std::pair{64, 64}, {128, 128}, {64, 32}, {80, 80}, {6, 6}, {96, 64}}) {
      RopeConfig c{.head_dim = hd, .n_rot = rot, .freq_base = 500000.0f, .style = style};
      for (std::int64_t pos : {0, 1, 17, 4095, 100000}) {
        std::vector<float> x = testing::RandomVector(rng, 3 * hd);
        std::vector<float> want(x);
        RopeReference(c, want.data(), 3, pos);
        // The table kernel with the reference's cos/sin tables.
        std::vector<float> cos_t(rot / 2), sin_t(rot / 2);
        const float theta_scale = std::pow(c.freq_base, -2.0f / static_cast<float>(rot));
        float theta = static_cast<float>(pos);
        for (int i = 0; i < rot / 2; ++i, theta *= theta_scale) {
          cos_t[i] = std::cos(theta);
          sin_t[i] = std::sin(theta);
        }
        for (const auto* table : testing::AvailableTables()) {
          std::vector<float> got(x);
          table->rope_apply(c, cos_t.data(), sin_t.data(), got.data(), 3);
          EXPECT_LT(testing::MaxRelError(got.data(), want.data(), got.size()), 1e-6)
              << internal::IsaName(table->isa) << " hd " << hd << " rot " << rot;
        }
        std::vector<float> pub(x);
        Rope(c, pub.data(), 3, pos);
        EXPECT_LT(testing::MaxRelError(pub.data(), want.data(), pub.size()), 1e-6);
      }
    }
  }
}

}  // namespace
}  // namespace smartgen::kernels

namespace smartgen::kernels {
namespace {

TEST(Rope, CachedTablesGiveTheSameResult) {
  std::mt19937 rng(3);
  RopeConfig c{.head_dim = 64, .n_rot = 64, .freq_base = 10000.0f, .style = RopeStyle::kNorm};
  const std::vector<float> x = testing::RandomVector(rng, 2 * 64);
  for (std::int64_t pos :
       {5, 5, 700, 300000, 300000}) {  // repeats hit the cache; 300000 is past it
    std::vector<float> first(x), second(x), want(x);
    Rope(c, first.data(), 2, pos);
    Rope(c, second.data(), 2, pos);
    EXPECT_EQ(first, second) << pos;
    RopeReference(c, want.data(), 2, pos);
    EXPECT_LT(testing::MaxRelError(first.data(), want.data(), first.size()), 1e-6) << pos;
  }
  // A new base or rotation width must not reuse the old tables.
  for (auto [base, rot] : {std::pair{500000.0f, 64}, {500000.0f, 32}, {10000.0f, 64}}) {
    c.freq_base = base;
    c.n_rot = rot;
    std::vector<float> got(x), want(x);
    Rope(c, got.data(), 2, 5);
    RopeReference(c, want.data(), 2, 5);
    EXPECT_LT(testing::MaxRelError(got.data(), want.data(), got.size()), 1e-6)
        << base << " " << rot;
  }
}

}  // namespace
}  // namespace smartgen::kernels
