#include "kernels/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iterator>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/fp16.h"
#include "kernels/kernel_table.h"

namespace smartgen::kernels {
namespace {

const std::int64_t kSizes[] = {1, 3, 7, 8, 15, 16, 17, 31, 33, 64, 100, 576, 1537};

TEST(RmsNorm, EveryIsaMatchesReference) {
  std::mt19937 rng(1);
  for (std::int64_t n : kSizes) {
    std::vector<float> x = testing::RandomVector(rng, n, -3.0f, 3.0f);
    std::vector<float> w = testing::RandomVector(rng, n, 0.5f, 1.5f);
    std::vector<float> want(n);
    RmsNormReference(x.data(), w.data(), n, 1e-5f, want.data());
    for (const auto* table : testing::AvailableTables()) {
      std::vector<float> got(x);  // in place (out aliases x)
      table->rms_norm(got.data(), w.data(), n, 1e-5f, got.data());
      EXPECT_LT(testing::MaxRelError(got.data(), want.data(), n), 1e-6)
          << internal::IsaName(table->isa) << " n " << n;
    }
  }
}

TEST(RmsNorm, ReferenceMatchesHandComputedCase) {
  const float x[4] = {1.0f, -2.0f, 3.0f, -4.0f};  // mean square 7.5
  const float w[4] = {1.0f, 1.0f, 2.0f, 0.5f};
  float out[4];
  RmsNormReference(x, w, 4, 0.0f, out);
  const float s = 1.0f / std::sqrt(7.5f);
  EXPECT_FLOAT_EQ(out[0], s);
  EXPECT_FLOAT_EQ(out[1], -2.0f * s);
  EXPECT_FLOAT_EQ(out[2], 6.0f * s);
  EXPECT_FLOAT_EQ(out[3], -2.0f * s);
}

TEST(SwiGlu, EveryIsaMatchesReference) {
  std::mt19937 rng(2);
  for (std::int64_t n : kSizes) {
    std::vector<float> g = testing::RandomVector(rng, n, -20.0f, 20.0f);
    std::vector<float> u = testing::RandomVector(rng, n, -2.0f, 2.0f);
    if (n > 4) g[0] = -100.0f, g[1] = 100.0f, g[2] = 0.0f, g[3] = -88.0f;
    std::vector<float> want(n);
    SwiGluReference(g.data(), u.data(), n, want.data());
    for (const auto* table : testing::AvailableTables()) {
      std::vector<float> got(g);
      table->swiglu(got.data(), u.data(), n, got.data());  // out aliases gate
      EXPECT_LT(testing::MaxRelError(got.data(), want.data(), n, 1e-3), 1e-6)
          << internal::IsaName(table->isa) << " n " << n;
    }
  }
}

TEST(SwiGlu, ReferenceValues) {
  const float g[3] = {0.0f, 1.0f, -1.0f}, u[3] = {5.0f, 2.0f, 3.0f};
  float out[3];
  SwiGluReference(g, u, 3, out);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_NEAR(out[1], 2.0f / (1.0f + std::exp(-1.0f)), 1e-7);
  EXPECT_NEAR(out[2], -3.0f / (1.0f + std::exp(1.0f)), 1e-7);
}

TEST(GeGlu, EveryIsaMatchesReference) {
  std::mt19937 rng(12);
  for (std::int64_t n : kSizes) {
    std::vector<float> g = testing::RandomVector(rng, n, -12.0f, 12.0f);
    std::vector<float> u = testing::RandomVector(rng, n, -2.0f, 2.0f);
    if (n > 4) g[0] = -100.0f, g[1] = 100.0f, g[2] = 0.0f, g[3] = -30.0f;
    std::vector<float> want(n);
    GeGluReference(g.data(), u.data(), n, want.data());
    for (const auto* table : testing::AvailableTables()) {
      std::vector<float> got(g);
      table->geglu(got.data(), u.data(), n, got.data());  // out aliases gate
      // Absolute below 1: the reference's 1 + tanh(u) cancels for x << 0 where the SIMD
      // x * sigmoid(2u) form does not (both are ~1e-8 off there).
      EXPECT_LT(testing::MaxRelError(got.data(), want.data(), n, 1.0), 2e-6)
          << internal::IsaName(table->isa) << " n " << n;
    }
  }
}

TEST(GeGlu, ReferenceValues) {
  // gelu_tanh(1) = 0.5 (1 + tanh(sqrt(2/pi) 1.044715)); gelu(-1) = -1 + gelu(1).
  const float g[3] = {0.0f, 1.0f, -1.0f}, u[3] = {5.0f, 2.0f, 3.0f};
  float out[3];
  GeGluReference(g, u, 3, out);
  const double gelu1 = 0.5 * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * 1.044715));
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_NEAR(out[1], 2.0 * gelu1, 1e-6);
  EXPECT_NEAR(out[2], 3.0 * (gelu1 - 1.0), 1e-6);
}

TEST(Softmax, EveryIsaMatchesReference) {
  std::mt19937 rng(3);
  for (std::int64_t n : kSizes) {
    std::vector<float> x = testing::RandomVector(rng, n, -30.0f, 30.0f);
    if (n > 3) x[1] = -INFINITY;  // masked entry
    std::vector<float> want(x);
    const float want_lse = SoftmaxReference(want.data(), n);
    for (const auto* table : testing::AvailableTables()) {
      std::vector<float> got(x);
      const float lse = table->softmax(got.data(), n);
      EXPECT_LT(testing::MaxRelError(got.data(), want.data(), n, 1e-6), 2e-6)
          << internal::IsaName(table->isa) << " n " << n;
      EXPECT_NEAR(lse, want_lse, 1e-5 * std::fabs(want_lse) + 1e-6);
      if (n > 3) {
        EXPECT_EQ(got[1], 0.0f);
      }
    }
  }
}

TEST(Softmax, ReferenceSumsToOneAndReturnsLse) {
  float x[3] = {1.0f, 2.0f, 3.0f};
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  EXPECT_NEAR(SoftmaxReference(x, 3), lse, 1e-6);
  EXPECT_NEAR(x[0] + x[1] + x[2], 1.0f, 1e-6);
  EXPECT_NEAR(x[2], std::exp(3.0 - lse), 1e-6);
  float big[2] = {1000.0f, 1000.0f};  // no overflow: max-subtracted
  EXPECT_NEAR(SoftmaxReference(big, 2), 1000.0 + std::log(2.0), 1e-3);
  EXPECT_FLOAT_EQ(big[0], 0.5f);
}

TEST(AddInPlace, EveryIsaAdds) {
  std::mt19937 rng(4);
  for (std::int64_t n : kSizes) {
    std::vector<float> x = testing::RandomVector(rng, n), y = testing::RandomVector(rng, n);
    for (const auto* table : testing::AvailableTables()) {
      std::vector<float> got(y);
      table->add_in_place(got.data(), x.data(), n);
      for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], y[i] + x[i]);
    }
  }
}

// Every ISA's row conversion gives the scalar F32ToF16's bits: ties to even, subnormals, the
// overflow edge, infinities, and NaN (fp16.h's one quiet NaN, not the CPU's payload) anywhere
// in a vector or the tail.
TEST(F32ToF16Row, EveryIsaMatchesScalarBits) {
  std::mt19937 rng(11);
  const float specials[] = {
      0.0f,           -0.0f,         1.0f,           65504.0f,       65520.0f,
      65519.99f,      1e-8f,         -3e-5f,         6.1035156e-05f, 5.9604645e-08f,
      2.9802322e-08f, 1.0009765625f, 1.00048828125f, 1.00146484375f, INFINITY,
      -INFINITY,      NAN,           -NAN,           1e30f};
  for (std::int64_t n : kSizes) {
    std::vector<float> x = testing::RandomVector(rng, n);
    for (std::int64_t i = 0; i < n; ++i) {
      if (i % 5 == 0) x[i] = specials[(i / 5) % std::size(specials)];
      if (i % 7 == 3) x[i] *= 3e4f;  // near and past the f16 range
    }
    std::vector<std::uint16_t> want(n);
    F32ToF16RowReference(x.data(), want.data(), n);
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(want[i], F32ToF16(x[i])) << i;
    for (const auto* table : testing::AvailableTables()) {
      std::vector<std::uint16_t> got(n, 0xffff);
      table->f32_to_f16(x.data(), got.data(), n);
      for (std::int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(got[i], want[i])
            << internal::IsaName(table->isa) << " n " << n << " i " << i << " x " << x[i];
      }
    }
  }
}

}  // namespace
}  // namespace smartgen::kernels

namespace smartgen::kernels {
namespace {

TEST(Softmax, AllMinusInfGivesZerosAndMinusInf) {
  for (const auto* table : testing::AvailableTables()) {
    for (std::int64_t n : {1, 5, 40}) {
      std::vector<float> x(n, -INFINITY);
      EXPECT_EQ(table->softmax(x.data(), n), -INFINITY) << internal::IsaName(table->isa);
      for (float v : x) EXPECT_EQ(v, 0.0f);
    }
  }
}

}  // namespace
}  // namespace smartgen::kernels
