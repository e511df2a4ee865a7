// Decode of 256-value super-block weights (Q2_K-Q6_K, IQ4_XS) with int8 dots on
// Q8_0-quantized activations (kernels::SetFastDot): the scalar twins stay within the activation
// rounding of the exact product, the AVX-512 VNNI kernels equal their twins, and decode batches
// equal single tokens; the AVX2 integer dots of every type equal the twins.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "kernel_test_util.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"

namespace smartgen::kernels {
namespace {

using gguf::GgmlType;

struct KFastDotOn {
  KFastDotOn() { SetFastDot(true); }
  ~KFastDotOn() { SetFastDot(false); }
};

struct KMatrix {
  std::vector<std::byte> bytes;
  std::vector<float> dequantized;  // rows x cols
};

// Rows of random values, some scaled up so that super-blocks get scales (and Q4_K mins) across
// their whole 6-bit / int8 range.
KMatrix RandomK(std::mt19937& rng, GgmlType type, std::int64_t rows, std::int64_t cols) {
  const std::size_t rb = gguf::RowBytes(type, cols);
  KMatrix m{std::vector<std::byte>(rb * rows), std::vector<float>(static_cast<std::size_t>(rows * cols))};
  std::uniform_real_distribution<float> gain(0.05f, 3.0f);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<float> row = testing::RandomVector(rng, static_cast<std::size_t>(cols));
    for (std::int64_t k = 0; k < cols; k += 32) {
      const float g = gain(rng), shift = (k / 32) % 3 == 0 ? 0.5f : 0.0f;  // some sub-blocks offset
      for (std::int64_t j = k; j < k + 32; ++j) row[j] = row[j] * g + shift;
    }
    EXPECT_TRUE(QuantizeRow(type, row.data(), m.bytes.data() + r * rb, cols));
    EXPECT_TRUE(DequantizeRow(type, m.bytes.data() + r * rb, m.dequantized.data() + r * cols, cols));
  }
  return m;
}

const std::int64_t kKShapes[][2] = {{1, 256}, {7, 512}, {33, 768}, {64, 1536}, {5, 4864}};

class FastDotK : public ::testing::TestWithParam<GgmlType> {};

TEST_P(FastDotK, ScalarTwinIsWithinTheActivationRounding) {
  const GgmlType type = GetParam();
  std::mt19937 rng(21);
  const auto* scalar = internal::GetKernelTable(internal::Isa::kScalar);
  for (const auto& [rows, cols] : kKShapes) {
    const KMatrix w = RandomK(rng, type, rows, cols);
    const std::vector<float> x = testing::RandomVector(rng, static_cast<std::size_t>(cols));
    std::vector<float> got(rows), exact(rows);
    ASSERT_TRUE(internal::MatVecWith(*scalar, type, w.bytes.data(), rows, cols, x.data(), exact.data(), nullptr));
    {
      KFastDotOn on;
      ASSERT_TRUE(internal::MatVecWith(*scalar, type, w.bytes.data(), rows, cols, x.data(), got.data(), nullptr));
    }
    bool any_differs = false;
    for (std::int64_t r = 0; r < rows; ++r) {
      // Each activation moves by at most half its block's step max|x| / 127.
      double bound = 1e-4;
      for (std::int64_t b = 0; b < cols / 32; ++b) {
        float amax = 0;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
        for (int j = 0; j < 32; ++j) bound += std::fabs(w.dequantized[r * cols + b * 32 + j]) * (amax / 127.0) * 0.5;
      }
      EXPECT_LE(std::fabs(got[r] - exact[r]), bound) << rows << "x" << cols << " row " << r;
      any_differs = any_differs || got[r] != exact[r];
    }
    EXPECT_TRUE(any_differs) << "the int8 path was not taken";
  }
}

TEST_P(FastDotK, VnniKernelEqualsTheScalarTwin) {
  const core::CpuFeatures& f = core::GetCpuFeatures();
  if (!f.HasAvx512() || !f.avx512vnni) GTEST_SKIP() << "this CPU has no AVX-512 VNNI";
  const GgmlType type = GetParam();
  std::mt19937 rng(22);
  core::ThreadPool pool(2);
  const auto* scalar = internal::GetKernelTable(internal::Isa::kScalar);
  const auto* avx512 = internal::GetKernelTable(internal::Isa::kAvx512);
  KFastDotOn on;
  EXPECT_TRUE(FastDotActive(type) || internal::ActiveKernels().isa != internal::Isa::kAvx512);
  for (const auto& [rows, cols] : kKShapes) {
    const KMatrix w = RandomK(rng, type, rows, cols);
    const std::vector<float> x = testing::RandomVector(rng, static_cast<std::size_t>(cols));
    std::vector<float> want(rows), got(rows, -1e30f);
    ASSERT_TRUE(internal::MatVecWith(*scalar, type, w.bytes.data(), rows, cols, x.data(), want.data(), nullptr));
    ASSERT_TRUE(internal::MatVecWith(*avx512, type, w.bytes.data(), rows, cols, x.data(), got.data(), &pool));
    // The same integer dots and scale products; only the order of the f32 sums differs.
    EXPECT_LT(testing::MaxRelError(got.data(), want.data(), rows), 5e-5) << rows << "x" << cols;
  }
}

// A decode batch (n tokens in one MatMul; from 3 tokens the batched kernels) equals the scalar
// twin token by token (where the active table has integer dots for the type), and the
// single-token path, up to the order of the f32 sums.
TEST_P(FastDotK, BatchedTokensEqualSingleTokens) {
  const GgmlType type = GetParam();
  std::mt19937 rng(23);
  core::ThreadPool pool(2);
  const auto* scalar = internal::GetKernelTable(internal::Isa::kScalar);
  KFastDotOn on;
  constexpr std::int64_t kRows = 70, kCols = 1536;
  const KMatrix w = RandomK(rng, type, kRows, kCols);
  const WeightView v{type, w.bytes.data(), kRows, kCols};
  // Where the active table has no integer dots for the type, the batch equals single tokens,
  // not the int8 twin.
  internal::PrepareActFn prepare = nullptr;
  const bool int8 =
      internal::FastDotActKernel(internal::ActiveKernels(), type, &prepare) != nullptr;
  for (const std::int64_t n : {2, 7, 16, 33, 64, 130}) {  // 130: a prefill chunk
    // A prefill chunk takes the integer dots only through the batched kernels (AVX-512 VNNI);
    // without them (SMARTGEN_ISA=avx2) it runs the exact f32 GEMM, by design.
    if (n > 64 && internal::FastDotBatchKernel(internal::ActiveKernels(), type) == nullptr)
      continue;
    const std::vector<float> x = testing::RandomVector(rng, static_cast<std::size_t>(n * kCols));
    std::vector<float> batched(static_cast<std::size_t>(n * kRows)), one(kRows), twin(kRows);
    MatMul(v, x.data(), n, batched.data(), &pool);
    for (std::int64_t t = 0; t < n; ++t) {
      MatVec(v, x.data() + t * kCols, one.data(), nullptr);
      ASSERT_TRUE(internal::MatVecWith(*scalar, type, w.bytes.data(), kRows, kCols, x.data() + t * kCols,
                                       twin.data(), nullptr));
      if (int8) {
        EXPECT_LT(testing::MaxRelError(batched.data() + t * kRows, twin.data(), kRows), 5e-5)
            << n << " " << t;
      }
      EXPECT_LT(testing::MaxRelError(batched.data() + t * kRows, one.data(), kRows), 5e-5) << n << " " << t;
    }
  }
}

// Weights at their types' largest stored values against activations all at +127: the batched
// kernels' integer sums at their extremes (the AVX2 panels add vpmaddubsw's 16-bit pair sums for
// several groups before widening) still equal the scalar twin.
class FastDotExtremes : public ::testing::TestWithParam<GgmlType> {};

TEST_P(FastDotExtremes, BatchedTokensEqualTheTwin) {
  const GgmlType type = GetParam();
  core::ThreadPool pool(2);
  const auto* scalar = internal::GetKernelTable(internal::Isa::kScalar);
  KFastDotOn on;
  constexpr std::int64_t kRows = 9, kCols = 1024, kTokens = 16;
  const std::size_t rb = gguf::RowBytes(type, kCols);
  std::vector<std::byte> w(rb * kRows);
  for (std::int64_t r = 0; r < kRows; ++r) {
    // Every value 1 but one -1.05 per 16: the scale (or the min) puts the ones at the top of the
    // stored range, for the types with an offset (Q4_0, Q5_0, Q6_K: the largest magnitude maps to
    // the bottom) and with mins alike.
    std::vector<float> row(kCols, 1.0f);
    for (std::int64_t k = r % 16; k < kCols; k += 16) row[k] = -1.05f;
    ASSERT_TRUE(QuantizeRow(type, row.data(), w.data() + r * rb, kCols));
  }
  const std::vector<float> x(static_cast<std::size_t>(kTokens * kCols), 0.5f);
  const WeightView v{type, w.data(), kRows, kCols};
  std::vector<float> batched(static_cast<std::size_t>(kTokens * kRows)), twin(kRows);
  MatMul(v, x.data(), kTokens, batched.data(), &pool);
  ASSERT_TRUE(
      internal::MatVecWith(*scalar, type, w.data(), kRows, kCols, x.data(), twin.data(), nullptr));
  for (std::int64_t t = 0; t < kTokens; ++t) {
    EXPECT_LT(testing::MaxRelError(batched.data() + t * kRows, twin.data(), kRows), 5e-5) << t;
  }
}

// The AVX2 integer dots (CPUs without AVX-512 VNNI) equal the scalar twins, every type.
class FastDotAvx2 : public ::testing::TestWithParam<GgmlType> {};

TEST_P(FastDotAvx2, KernelEqualsTheScalarTwin) {
  const auto* avx2 = internal::GetKernelTable(internal::Isa::kAvx2);
  if (avx2 == nullptr) GTEST_SKIP() << "this CPU has no AVX2";
  const GgmlType type = GetParam();
  std::mt19937 rng(24);
  core::ThreadPool pool(2);
  const auto* scalar = internal::GetKernelTable(internal::Isa::kScalar);
  KFastDotOn on;
  internal::PrepareActFn prepare = nullptr;
  EXPECT_NE(internal::FastDotActKernel(*avx2, type, &prepare), nullptr);
  for (const auto& [rows, cols] : kKShapes) {
    const KMatrix w = RandomK(rng, type, rows, cols);
    const std::vector<float> x = testing::RandomVector(rng, static_cast<std::size_t>(cols));
    std::vector<float> want(rows), got(rows, -1e30f), exact(rows);
    ASSERT_TRUE(internal::MatVecWith(*scalar, type, w.bytes.data(), rows, cols, x.data(), want.data(), nullptr));
    ASSERT_TRUE(internal::MatVecWith(*avx2, type, w.bytes.data(), rows, cols, x.data(), got.data(), &pool));
    EXPECT_LT(testing::MaxRelError(got.data(), want.data(), rows), 5e-5) << rows << "x" << cols;
    SetFastDot(false);
    ASSERT_TRUE(internal::MatVecWith(*avx2, type, w.bytes.data(), rows, cols, x.data(), exact.data(), &pool));
    SetFastDot(true);
    EXPECT_NE(got, exact) << "the integer path was not taken";
  }
}

INSTANTIATE_TEST_SUITE_P(Types, FastDotAvx2,
                         ::testing::Values(GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ5_0,
                                           GgmlType::kQ4_K, GgmlType::kQ6_K, GgmlType::kQ5_K,
                                           GgmlType::kIQ4_NL, GgmlType::kIQ4_XS, GgmlType::kQ4_1,
                                           GgmlType::kQ5_1, GgmlType::kQ2_K, GgmlType::kQ3_K),
                         [](const auto& info) {
                           return std::string(gguf::GetTypeInfo(info.param).name);
                         });

INSTANTIATE_TEST_SUITE_P(Types, FastDotExtremes,
                         ::testing::Values(GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ5_0,
                                           GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,
                                           GgmlType::kQ4_1, GgmlType::kQ5_1, GgmlType::kQ2_K,
                                           GgmlType::kQ3_K),
                         [](const auto& info) {
                           return std::string(gguf::GetTypeInfo(info.param).name);
                         });

INSTANTIATE_TEST_SUITE_P(Types, FastDotK,
                         ::testing::Values(GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,
                                           GgmlType::kIQ4_XS, GgmlType::kQ2_K, GgmlType::kQ3_K),
                         [](const auto& info) {
                           return std::string(gguf::GetTypeInfo(info.param).name);
                         });

}  // namespace
}  // namespace smartgen::kernels
