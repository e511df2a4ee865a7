// The weight types of quant_more.h: hand-built blocks decode to the values ggml's block layout
// defines, and the encoders round-trip within a step of their grid.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_util.h"
#include "kernels/quant.h"

namespace smartgen::kernels {
namespace {

using gguf::GgmlType;

TEST(QuantLegacy, Q5_0TakesTheFifthBitFromQh) {
  BlockQ5_0 b{};
  b.d = F32ToF16(0.5f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<std::uint8_t>(j | ((15 - j) << 4));
  const std::uint32_t qh = 0x8000'0001u;  // element 0 and element 31 get bit 4
  std::memcpy(b.qh, &qh, 4);
  float y[32];
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ5_0, &b, y, 32));
  for (int j = 0; j < 32; ++j) {
    const int nib = j < 16 ? j : 15 - (j - 16);
    const int q = nib + ((j == 0 || j == 31) ? 16 : 0);
    EXPECT_EQ(y[j], 0.5f * static_cast<float>(q - 16)) << j;
  }
}

TEST(QuantLegacy, Q4_1AndQ5_1AddTheMin) {
  BlockQ5_1 b{};
  b.d = F32ToF16(0.25f);
  b.m = F32ToF16(-2.0f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<std::uint8_t>(3 | (7 << 4));
  const std::uint32_t qh = 1u << 20;  // element 20
  std::memcpy(b.qh, &qh, 4);
  float y[32];
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ5_1, &b, y, 32));
  EXPECT_EQ(y[0], 0.25f * 3 - 2.0f);
  EXPECT_EQ(y[16], 0.25f * 7 - 2.0f);
  EXPECT_EQ(y[20], 0.25f * 23 - 2.0f);
  BlockQ4_1 c{};
  c.d = b.d;
  c.m = b.m;
  std::memcpy(c.qs, b.qs, 16);
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ4_1, &c, y, 32));
  EXPECT_EQ(y[20], 0.25f * 7 - 2.0f);
}

TEST(QuantIq4, NonLinearGridAndSubBlockScales) {
  BlockIq4Nl nl{};
  nl.d = F32ToF16(0.125f);
  for (int j = 0; j < 16; ++j) nl.qs[j] = static_cast<std::uint8_t>(j | ((15 - j) << 4));
  float y[256];
  ASSERT_TRUE(DequantizeRow(GgmlType::kIQ4_NL, &nl, y, 32));
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.125f * kIq4nlValues[j]);
    EXPECT_EQ(y[j + 16], 0.125f * kIq4nlValues[15 - j]);
  }
  BlockIq4Xs xs{};
  xs.d = F32ToF16(0.5f);
  // Sub-block 3: ls = 0x5 | (2 << 4) = 37 -> scale 5; sub-block 0: ls 0 -> -32.
  xs.scales_l[1] = 0x50;
  xs.scales_h = static_cast<std::uint16_t>(2 << 6);
  std::memset(xs.qs, 0x98, sizeof(xs.qs));  // low nibble 8 (+1), high nibble 9 (+13)
  ASSERT_TRUE(DequantizeRow(GgmlType::kIQ4_XS, &xs, y, 256));
  EXPECT_EQ(y[0], 0.5f * -32 * 1);
  EXPECT_EQ(y[16], 0.5f * -32 * 13);
  EXPECT_EQ(y[96], 0.5f * 5 * 1);
  EXPECT_EQ(y[96 + 16], 0.5f * 5 * 13);
}

TEST(QuantKMore, Q3_KSignedScalesAndHighMask) {
  BlockQ3_K b{};
  b.d = F32ToF16(1.0f);
  // Scale 9 (j = 9): low nibble in the high half of scales[1], high bits in scales[9] >> 4.
  const int u = 32 + 7;  // s - 32 = 7
  b.scales[1] = static_cast<std::uint8_t>((u & 0xF) << 4);
  b.scales[8 + 9 % 4] = static_cast<std::uint8_t>((u >> 4) << (2 * (9 / 4)));
  // Sub-block 9 = half 1, j = 0, second 16: elements 144..159, byte 32 + 16 + l, shift 0.
  b.qs[32 + 16 + 2] = 3;           // element 146: q = 3
  b.hmask[16 + 2] = 1 << 4;        // high bit set: value 3
  b.qs[32 + 16 + 5] = 1;           // element 149: q = 1, no high bit: value 1 - 4
  float y[256];
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ3_K, &b, y, 256));
  EXPECT_EQ(y[146], 7.0f * 3);
  EXPECT_EQ(y[149], 7.0f * -3);
  EXPECT_EQ(y[150], 7.0f * -4);
  EXPECT_EQ(y[0], -32.0f * -4);  // scale 0 is 0 - 32
}

TEST(QuantKMore, Q2_KAndQ5_KLayouts) {
  BlockQ2_K b{};
  b.d = F32ToF16(0.5f);
  b.dmin = F32ToF16(0.25f);
  b.scales[5] = static_cast<std::uint8_t>(3 | (2 << 4));  // sub-block 5: j = 2, second 16
  b.qs[16 + 1] = static_cast<std::uint8_t>(2 << 4);       // element 64 + 16 + 1, shift 4
  float y[256];
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ2_K, &b, y, 256));
  EXPECT_EQ(y[81], 0.5f * 3 * 2 - 0.25f * 2);
  EXPECT_EQ(y[80], -0.25f * 2);

  BlockQ5_K k{};
  k.d = F32ToF16(1.0f);
  k.dmin = F32ToF16(0.5f);
  k.scales[3] = 2;   // sub-block 3 scale
  k.scales[7] = 4;   // sub-block 3 min
  k.qs[32 + 5] = static_cast<std::uint8_t>(9 << 4);  // element 64 + 32 + 5 (sub-block 3)
  k.qh[5] = 1 << 3;                                  // its fifth bit (2g + 1, g = 1)
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ5_K, &k, y, 256));
  EXPECT_EQ(y[101], 2.0f * 25 - 0.5f * 4);
  EXPECT_EQ(y[100], -0.5f * 4);
}

TEST(QuantMore, EncodersRoundTripWithinTheirGrid) {
  std::mt19937 rng(7);
  const std::int64_t n = 512;
  const std::vector<float> x = testing::RandomVector(rng, n);
  struct Case {
    GgmlType type;
    float tol;  // max |x - dequant(quant(x))| for x in [-1, 1]: one grid step (the signed
                // types reach the far end of their range only to within a step)
  };
  for (const Case& c : {Case{GgmlType::kQ4_1, 0.07f}, Case{GgmlType::kQ5_0, 0.07f},
                        Case{GgmlType::kQ5_1, 0.035f}, Case{GgmlType::kQ2_K, 0.4f},
                        Case{GgmlType::kQ3_K, 0.3f}, Case{GgmlType::kQ5_K, 0.05f},
                        Case{GgmlType::kIQ4_NL, 0.12f}, Case{GgmlType::kIQ4_XS, 0.15f}}) {
    std::vector<std::byte> q(gguf::RowBytes(c.type, n));
    ASSERT_TRUE(QuantizeRow(c.type, x.data(), q.data(), n));
    std::vector<float> y(n);
    ASSERT_TRUE(DequantizeRow(c.type, q.data(), y.data(), n));
    float worst = 0.0f;
    for (std::int64_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(y[i] - x[i]));
    EXPECT_LT(worst, c.tol) << gguf::GetTypeInfo(c.type).name;
    EXPECT_GT(worst, 0.0f) << gguf::GetTypeInfo(c.type).name;  // it did quantize
  }
}

}  // namespace
}  // namespace smartgen::kernels
