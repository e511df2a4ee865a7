#include "kernels/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernel_test_util.h"

namespace smartgen::kernels {
namespace {

using gguf::GgmlType;

TEST(QuantQ8_0, QuantizesLikeGgmlRef) {
  // One block with amax 127 * 0.5: d = 0.5 exactly, q = round-half-away(x / 0.5).
  float x[kQK8_0] = {};
  x[0] = 63.5f;   // amax -> d = 0.5, q = 127
  x[1] = 0.25f;   // 0.5 -> 1 (half away from zero)
  x[2] = -0.25f;  // -0.5 -> -1
  x[3] = 0.74f;   // 1.48 -> 1
  x[4] = -63.5f;  // -127
  BlockQ8_0 b;
  QuantizeRowQ8_0(x, &b, kQK8_0);
  EXPECT_EQ(F16ToF32(b.d), 0.5f);
  EXPECT_EQ(b.qs[0], 127);
  EXPECT_EQ(b.qs[1], 1);
  EXPECT_EQ(b.qs[2], -1);
  EXPECT_EQ(b.qs[3], 1);
  EXPECT_EQ(b.qs[4], -127);
  EXPECT_EQ(b.qs[5], 0);
}

TEST(QuantQ8_0, ZeroBlockHasZeroScale) {
  std::vector<float> x(64, 0.0f);
  std::vector<BlockQ8_0> b(2);
  QuantizeRowQ8_0(x.data(), b.data(), 64);
  std::vector<float> y(64, 1.0f);
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ8_0, b.data(), y.data(), 64));
  for (float v : y) EXPECT_EQ(v, 0.0f);
}

TEST(QuantQ8_0, RoundTripErrorWithinHalfStep) {
  std::mt19937 rng(3);
  const int n = 32 * 37;
  std::vector<float> x = testing::RandomVector(rng, n, -2.0f, 2.0f);
  std::vector<BlockQ8_0> q(n / kQK8_0);
  QuantizeRowQ8_0(x.data(), q.data(), n);
  std::vector<float> y(n);
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ8_0, q.data(), y.data(), n));
  for (int blk = 0; blk < n / kQK8_0; ++blk) {
    const float d = F16ToF32(q[blk].d);
    for (int j = 0; j < kQK8_0; ++j) {
      const int i = blk * kQK8_0 + j;
      // Half a step of rounding plus the f16 rounding of d (relative 2^-11 of 127 steps).
      EXPECT_LE(std::fabs(y[i] - x[i]), 0.5f * d + 127.0f * d * 0.0005f) << i;
      EXPECT_EQ(y[i], static_cast<float>(q[blk].qs[j]) * d);  // exact product, like ggml
    }
  }
  // Quantizing the dequantized row reproduces the same blocks (idempotent).
  std::vector<BlockQ8_0> q2(n / kQK8_0);
  QuantizeRowQ8_0(y.data(), q2.data(), n);
  EXPECT_EQ(std::memcmp(q.data(), q2.data(), q.size() * sizeof(BlockQ8_0)), 0);
}

TEST(Quant, PlainTypesRoundTripThroughRows) {
  std::mt19937 rng(5);
  const int n = 96;
  std::vector<float> x = testing::RandomVector(rng, n);
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0}) {
    std::vector<std::byte> buf(gguf::RowBytes(t, n));
    ASSERT_TRUE(QuantizeRow(t, x.data(), buf.data(), n));
    std::vector<float> y(n);
    ASSERT_TRUE(DequantizeRow(t, buf.data(), y.data(), n));
    for (int i = 0; i < n; ++i) {
      float want = x[i];
      if (t == GgmlType::kF16) want = F16ToF32(F32ToF16(x[i]));
      if (t == GgmlType::kBF16) want = Bf16ToF32(F32ToBf16(x[i]));
      if (t == GgmlType::kQ8_0) {
        EXPECT_NEAR(y[i], x[i], 0.01f);
        continue;
      }
      EXPECT_EQ(y[i], want) << gguf::GetTypeInfo(t).name << " " << i;
    }
  }
}

TEST(QuantQ4_0, QuantizesLikeGgmlRef) {
  // max = -4 (largest magnitude): d = -4 / -8 = 0.5, q = min(15, (int8)(x / d + 8.5)).
  float x[kQK4_0] = {};
  x[0] = -4.0f;   // -8 + 8.5 -> 0
  x[1] = 3.4f;    // 6.8 + 8.5 = 15.3 -> 15
  x[2] = 0.3f;    // 0.6 + 8.5 = 9.1 -> 9
  x[16] = 1.0f;   // high nibble of qs[0]: 2 + 8.5 -> 10
  x[17] = -0.3f;  // -0.6 + 8.5 = 7.9 -> 7
  BlockQ4_0 b;
  QuantizeRowQ4_0(x, &b, kQK4_0);
  EXPECT_EQ(F16ToF32(b.d), 0.5f);
  EXPECT_EQ(b.qs[0], 0 | (10 << 4));
  EXPECT_EQ(b.qs[1], 15 | (7 << 4));
  EXPECT_EQ(b.qs[2], 9 | (8 << 4));
  float y[kQK4_0];
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ4_0, &b, y, kQK4_0));
  EXPECT_EQ(y[0], -4.0f);
  EXPECT_EQ(y[1], 3.5f);
  EXPECT_EQ(y[16], 1.0f);
  EXPECT_EQ(y[17], -0.5f);
}

TEST(QuantKQuants, ScaleMinUnpacksBothLayouts) {
  // Sub-blocks 0..3 keep 6 bits in scales[j] / scales[j + 4]; 4..7 split 4 + 2 bits.
  std::uint8_t scales[12] = {};
  scales[1] = 0x3f | 0x40;            // sc1 = 63, top bits 01 -> sc5 high bits
  scales[5] = 0x2a | 0x80;            // m1 = 42, top bits 10 -> m5 high bits
  scales[9] = 0x7 | (0x9 << 4);       // sc5 low 7, m5 low 9
  std::uint8_t sc, m;
  Q4KScaleMin(1, scales, &sc, &m);
  EXPECT_EQ(sc, 63);
  EXPECT_EQ(m, 42);
  Q4KScaleMin(5, scales, &sc, &m);
  EXPECT_EQ(sc, 0x7 | (1 << 4));
  EXPECT_EQ(m, 0x9 | (2 << 4));
}

TEST(QuantKQuants, RoundTripErrorIsSmall) {
  std::mt19937 rng(9);
  const int n = 256 * 3;
  std::vector<float> x = testing::RandomVector(rng, n);
  for (GgmlType t : {GgmlType::kQ4_0, GgmlType::kQ4_K, GgmlType::kQ6_K}) {
    std::vector<std::byte> buf(gguf::RowBytes(t, n));
    ASSERT_TRUE(QuantizeRow(t, x.data(), buf.data(), n));
    std::vector<float> y(n);
    ASSERT_TRUE(DequantizeRow(t, buf.data(), y.data(), n));
    // Values in [-1, 1]: steps of about 2/15 (4-bit) or 1/31 (6-bit), plus scale rounding.
    const float tol = t == GgmlType::kQ6_K ? 0.03f : 0.15f;
    for (int i = 0; i < n; ++i) EXPECT_NEAR(y[i], x[i], tol) << gguf::GetTypeInfo(t).name << " " << i;
  }
}

TEST(Quant, UnsupportedTypesAreRejected) {
  float x[256] = {};
  std::byte buf[1024] = {};
  EXPECT_FALSE(DequantizeRow(GgmlType::kQ8_K, buf, x, 256));
  EXPECT_FALSE(QuantizeRow(GgmlType::kQ8_K, x, buf, 256));
}

}  // namespace
}  // namespace smartgen::kernels
