#include "kernels/fp16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

namespace smartgen::kernels {
namespace {

// Independent f16 decode: value = (-1)^s * 2^(e-15) * (1 + m/1024), subnormals 2^-14 * m/1024.
double F16Value(std::uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double sign = s ? -1.0 : 1.0;
  if (e == 0) return sign * std::ldexp(m, -24);
  if (e == 31)
    return m ? std::numeric_limits<double>::quiet_NaN()
             : sign * std::numeric_limits<double>::infinity();
  return sign * std::ldexp(1024 + m, e - 25);
}

// Round-to-nearest-even f32 -> f16 by searching the two neighbouring f16 values in double.
std::uint16_t F16Nearest(float f) {
  if (std::isnan(f)) return 0x7e00;
  const std::uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  // Largest finite half is 65504; halfway to the next (65536) rounds to inf (even mantissa).
  if (a >= 65520.0) return sign | 0x7c00;
  std::uint16_t lo = 0;
  for (std::uint16_t step = 0x4000; step; step >>= 1) {  // largest h with value <= a
    if (F16Value(static_cast<std::uint16_t>(lo + step)) <= a) lo += step;
  }
  const std::uint16_t hi = lo + 1;
  const double dlo = a - F16Value(lo), dhi = F16Value(hi) - a;
  const std::uint16_t pick = dlo < dhi ? lo : dhi < dlo ? hi : ((lo & 1) ? hi : lo);
  return sign | pick;
}

TEST(Fp16, DecodesEveryHalfExactly) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const double want = F16Value(static_cast<std::uint16_t>(h));
    const float got = F16ToF32(static_cast<f16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << h;
    } else {
      ASSERT_EQ(static_cast<double>(got), want) << "h=" << h;
      ASSERT_EQ(std::signbit(got), (h & 0x8000) != 0) << h;
    }
  }
}

TEST(Fp16, EveryHalfRoundTrips) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float f = F16ToF32(static_cast<f16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(F16ToF32(F32ToF16(f)))) << h;
    } else {
      ASSERT_EQ(F32ToF16(f), h) << "h=" << h;
    }
  }
}

TEST(Fp16, RoundsToNearestEven) {
  // Midpoints between every pair of adjacent finite halves, and points just off them.
  for (std::uint32_t h = 0; h < 0x7bff; ++h) {
    const double a = F16Value(static_cast<std::uint16_t>(h));
    const double b = F16Value(static_cast<std::uint16_t>(h + 1));
    const float mid = static_cast<float>((a + b) / 2);  // exact in f32
    ASSERT_EQ(F32ToF16(mid), F16Nearest(mid)) << "h=" << h;
    ASSERT_EQ(F32ToF16(-mid), F16Nearest(-mid)) << "h=" << h;
    const float up = std::nextafter(mid, 1e9f), down = std::nextafter(mid, -1e9f);
    ASSERT_EQ(F32ToF16(up), F16Nearest(up)) << "h=" << h;
    ASSERT_EQ(F32ToF16(down), F16Nearest(down)) << "h=" << h;
  }
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    const float f = std::bit_cast<float>(bits(rng));
    if (std::isnan(f)) continue;
    ASSERT_EQ(F32ToF16(f), F16Nearest(f)) << f;
  }
  EXPECT_EQ(F32ToF16(65504.0f), 0x7bff);
  EXPECT_EQ(F32ToF16(65519.0f), 0x7bff);
  EXPECT_EQ(F32ToF16(65520.0f), 0x7c00);
  EXPECT_EQ(F32ToF16(1e10f), 0x7c00);
  EXPECT_EQ(F32ToF16(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_TRUE(std::isnan(F16ToF32(F32ToF16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Bf16, EveryBf16RoundTrips) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float f = Bf16ToF32(static_cast<bf16_t>(h));
    EXPECT_EQ(std::bit_cast<std::uint32_t>(f), h << 16);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(Bf16ToF32(F32ToBf16(f)))) << h;
    } else {
      ASSERT_EQ(F32ToBf16(f), h) << "h=" << h;
    }
  }
}

TEST(Bf16, RoundsToNearestEven) {
  // Low 16 bits exactly half: ties go to the even upper half.
  EXPECT_EQ(F32ToBf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // even: stays
  EXPECT_EQ(F32ToBf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // odd: up
  EXPECT_EQ(F32ToBf16(std::bit_cast<float>(0x3f808001u)), 0x3f81);  // above half: up
  EXPECT_EQ(F32ToBf16(std::bit_cast<float>(0x3f807fffu)), 0x3f80);  // below half: down
  EXPECT_EQ(F32ToBf16(std::bit_cast<float>(0x7f7fffffu)), 0x7f80);  // max float -> inf
  std::mt19937 rng(11);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    const std::uint32_t x = bits(rng);
    const float f = std::bit_cast<float>(x);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(Bf16ToF32(F32ToBf16(f))));
      continue;
    }
    // Nearest of the two candidates (truncated and truncated + 1 ulp), ties to even.
    const std::uint16_t lo = static_cast<std::uint16_t>(x >> 16);
    const std::uint16_t hi = static_cast<std::uint16_t>(lo + 1);
    // Rounding past the largest finite bf16 goes to inf, i.e. "2^128" for the distance.
    const double hi_value = (hi & 0x7fff) == 0x7f80 ? std::copysign(std::ldexp(1.0, 128), f)
                                                    : static_cast<double>(Bf16ToF32(hi));
    const double dlo = std::fabs(static_cast<double>(f) - Bf16ToF32(lo));
    const double dhi = std::fabs(hi_value - f);
    const std::uint16_t want = dlo < dhi ? lo : dhi < dlo ? hi : ((lo & 1) ? hi : lo);
    ASSERT_EQ(F32ToBf16(f), want) << std::hex << x;
  }
}

}  // namespace
}  // namespace smartgen::kernels
