// Decode with low-precision dots (kernels::SetFastDot): Q8_0, Q4_0, Q5_0, IQ4_NL, Q4_1 and Q5_1
// with int8 activations, BF16 with bf16 activations. Each scalar twin stays within the activation
// rounding of the exact product, the AVX-512 VNNI / AVX512-BF16 kernels equal their twins, and
// switching it off gives the exact path back.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/cpu_features.h"
#include "kernel_test_util.h"
#include "kernels/fp16.h"
#include "kernels/kernel_table.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"

namespace smartgen::kernels {
namespace {

using gguf::GgmlType;

// Turns the int8 path on for one scope.
struct FastDotOn {
  FastDotOn() { SetFastDot(true); }
  ~FastDotOn() { SetFastDot(false); }
};

struct Q8Matrix {
  std::vector<std::byte> bytes;
  std::vector<float> dequantized;  // rows x cols
  std::int64_t rows, cols;
};

Q8Matrix RandomQ8(std::mt19937& rng, std::int64_t rows, std::int64_t cols) {
  Q8Matrix m{std::vector<std::byte>(gguf::RowBytes(GgmlType::kQ8_0, cols) * rows), {}, rows, cols};
  const std::size_t rb = gguf::RowBytes(GgmlType::kQ8_0, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::vector<float> row = testing::RandomVector(rng, cols);
    EXPECT_TRUE(QuantizeRow(GgmlType::kQ8_0, row.data(), m.bytes.data() + r * rb, cols));
    const auto* blocks = reinterpret_cast<const BlockQ8_0*>(m.bytes.data() + r * rb);
    for (std::int64_t b = 0; b < cols / kQK8_0; ++b) {
      for (int j = 0; j < kQK8_0; ++j) m.dequantized.push_back(F16ToF32(blocks[b].d) * blocks[b].qs[j]);
    }
  }
  return m;
}

// Blocks per row: 1, 2, 3, 5 and 7 (a group of 4 and a tail), 18, 48 and 152.
const std::int64_t kDotShapes[][2] = {{1, 32},  {7, 64},     {33, 96},  {3, 160},
                                      {2, 224}, {64, 576}, {130, 1536}, {5, 4864}};

TEST(FastDotQ8, ScalarTwinIsWithinTheActivationRounding) {
  std::mt19937 rng(3);
  const auto* scalar = internal::GetKernelTable(internal::Isa::kScalar);
  for (const auto& [rows, cols] : kDotShapes) {
    const Q8Matrix w = RandomQ8(rng, rows, cols);
    const std::vector<float> x = testing::RandomVector(rng, cols);
    std::vector<float> got(rows), exact(rows);
    ASSERT_TRUE(internal::MatVecWith(*scalar, GgmlType::kQ8_0, w.bytes.data(), rows, cols, x.data(),
                                     exact.data(), nullptr));
    {
      FastDotOn on;
      ASSERT_TRUE(internal::MatVecWith(*scalar, GgmlType::kQ8_0, w.bytes.data(), rows, cols,
                                       x.data(), got.data(), nullptr));
    }
    // Each activation moves by at most half its block's step d = max|x| / 127.
    for (std::int64_t r = 0; r < rows; ++r) {
      double bound = 1e-4;
      for (std::int64_t b = 0; b < cols / kQK8_0; ++b) {
        float amax = 0;
        for (int j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(x[b * kQK8_0 + j]));
        for (int j = 0; j < kQK8_0; ++j) {
          bound += std::fabs(w.dequantized[r * cols + b * kQK8_0 + j]) * (amax / 127.0) * 0.5;
        }
      }
      EXPECT_LE(std::fabs(got[r] - exact[r]), bound) << rows << "x" << cols << " row " << r;
      EXPECT_NE(got[r], exact[r]) << "the int8 path was not taken";
    }
  }
}

// The AVX-512 table's fast-dot MatVec of `type` against the scalar twin on every shape, with
// weights from `bytes_of(rng, rows, cols)`. Only the order of the f32 sums differs.
template <typename MakeBytes>
void ExpectAvx512EqualsTwin(GgmlType type, std::uint32_t seed, MakeBytes bytes_of, double tol = 1e-5) {
  std::mt19937 rng(seed);
  core::ThreadPool pool(2);
  const auto* scalar = internal::GetKernelTable(internal::Isa::kScalar);
  const auto* avx512 = internal::GetKernelTable(internal::Isa::kAvx512);
  ASSERT_NE(avx512, nullptr);
  FastDotOn on;
  for (const auto& [rows, cols] : kDotShapes) {
    const std::vector<std::byte> w = bytes_of(rng, rows, cols);
    const std::vector<float> x = testing::RandomVector(rng, cols);
    std::vector<float> want(rows), got(rows, -1e30f);
    ASSERT_TRUE(internal::MatVecWith(*scalar, type, w.data(), rows, cols, x.data(), want.data(), nullptr));
    ASSERT_TRUE(internal::MatVecWith(*avx512, type, w.data(), rows, cols, x.data(), got.data(), &pool));
    EXPECT_LT(testing::MaxRelError(got.data(), want.data(), rows), tol) << rows << "x" << cols;
  }
  EXPECT_TRUE(FastDotActive(type) || internal::ActiveKernels().isa != internal::Isa::kAvx512);
}

TEST(FastDotQ8, VnniKernelEqualsTheScalarTwin) {
  const core::CpuFeatures& f = core::GetCpuFeatures();
  if (!f.HasAvx512() || !f.avx512vnni) GTEST_SKIP() << "this CPU has no AVX-512 VNNI";
  // The same integer dots; vpdpbusd sums the scaled blocks in another order.
  ExpectAvx512EqualsTwin(GgmlType::kQ8_0, 4, [](std::mt19937& rng, std::int64_t rows, std::int64_t cols) {
    return RandomQ8(rng, rows, cols).bytes;
  });
}

TEST(FastDotQ8, OffByDefaultAndSwitchesBack) {
  EXPECT_FALSE(FastDotActive(GgmlType::kQ8_0));
  std::mt19937 rng(5);
  const Q8Matrix w = RandomQ8(rng, 9, 256);
  const std::vector<float> x = testing::RandomVector(rng, 256);
  std::vector<float> before(9), after(9), want(9);
  const WeightView view{GgmlType::kQ8_0, w.bytes.data(), 9, 256};
  MatVecReference(view, x.data(), want.data());
  MatVec(view, x.data(), before.data(), nullptr);
  { FastDotOn on; }
  MatVec(view, x.data(), after.data(), nullptr);
  EXPECT_EQ(before, after);
  EXPECT_LT(testing::MaxRelError(after.data(), want.data(), 9), 1e-5);
}

// Q4_0 (or Q5_0, IQ4_NL, Q4_1, Q5_1) weights with their exact dequantized values.
Q8Matrix RandomQ4(std::mt19937& rng, std::int64_t rows, std::int64_t cols, GgmlType type = GgmlType::kQ4_0) {
  const std::size_t rb = gguf::RowBytes(type, cols);
  Q8Matrix m{std::vector<std::byte>(rb * rows), std::vector<float>(static_cast<std::size_t>(rows * cols)), rows, cols};
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::vector<float> row = testing::RandomVector(rng, cols);
    EXPECT_TRUE(QuantizeRow(type, row.data(), m.bytes.data() + r * rb, cols));
    DequantizeRow(type, m.bytes.data() + r * rb, m.dequantized.data() + r * cols, cols);
  }
  return m;
}

class FastDotQ4 : public ::testing::TestWithParam<GgmlType> {};

TEST_P(FastDotQ4, ScalarTwinIsWithinTheActivationRounding) {
  const GgmlType type = GetParam();
  std::mt19937 rng(8);
  const auto* scalar = internal::GetKernelTable(internal::Isa::kScalar);
  for (const auto& [rows, cols] : kDotShapes) {
    const Q8Matrix w = RandomQ4(rng, rows, cols, type);
    const std::vector<float> x = testing::RandomVector(rng, cols);
    std::vector<float> got(rows), exact(rows);
    ASSERT_TRUE(internal::MatVecWith(*scalar, type, w.bytes.data(), rows, cols, x.data(),
                                     exact.data(), nullptr));
    {
      FastDotOn on;
      EXPECT_TRUE(FastDotActive(type) || internal::ActiveKernels().isa != internal::Isa::kAvx512 ||
                  !core::GetCpuFeatures().avx512vnni);
      ASSERT_TRUE(internal::MatVecWith(*scalar, type, w.bytes.data(), rows, cols,
                                       x.data(), got.data(), nullptr));
    }
    EXPECT_NE(got, exact) << rows << "x" << cols << ": the int8 path was not taken";
    for (std::int64_t r = 0; r < rows; ++r) {
      double bound = 1e-4;
      for (std::int64_t b = 0; b < cols / kQK8_0; ++b) {
        float amax = 0;
        for (int j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(x[b * kQK8_0 + j]));
        for (int j = 0; j < kQK8_0; ++j) {
          bound += std::fabs(w.dequantized[r * cols + b * kQK8_0 + j]) * (amax / 127.0) * 0.5;
        }
      }
      EXPECT_LE(std::fabs(got[r] - exact[r]), bound) << rows << "x" << cols << " row " << r;
    }
  }
}

TEST_P(FastDotQ4, VnniKernelEqualsTheScalarTwin) {
  const core::CpuFeatures& f = core::GetCpuFeatures();
  if (!f.HasAvx512() || !f.avx512vnni) GTEST_SKIP() << "this CPU has no AVX-512 VNNI";
  const GgmlType type = GetParam();
  // The scaled dots and the offsets are each summed in another order, then subtracted.
  ExpectAvx512EqualsTwin(type, 9, [type](std::mt19937& rng, std::int64_t rows, std::int64_t cols) {
    return RandomQ4(rng, rows, cols, type).bytes;
  }, 5e-5);
}

INSTANTIATE_TEST_SUITE_P(Types, FastDotQ4,
                         ::testing::Values(GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kIQ4_NL,
                                           GgmlType::kQ4_1, GgmlType::kQ5_1),
                         [](const auto& info) {
                           return std::string(gguf::GetTypeInfo(info.param).name);
                         });

// The activations are prepared once per pass and shared by the products of one input: q/k/v
// (MatMulMany) and gate/up (MatMulSwiGlu) give what each product gives alone.
// Every table prepares the activations bit for bit as the scalar code does (a batch, a team
// pass and a single token may prepare on different tables' code and must agree): values of every
// scale, a block of zeros, one of exact halves (ties round to even), a block with one huge value.
TEST(FastDotQ8, EveryPrepareEqualsTheScalarOneBitForBit) {
  std::mt19937 rng(31);
  constexpr std::int64_t kN = 32 * 40;
  std::vector<float> x = testing::RandomVector(rng, kN);
  std::uniform_real_distribution<float> gain(1e-6f, 1e3f);
  for (std::int64_t b = 0; b < kN / 32; ++b) {
    const float g = gain(rng);
    for (int j = 0; j < 32; ++j) x[b * 32 + j] *= g;
  }
  for (int j = 0; j < 32; ++j) x[32 + j] = 0.0f;
  for (int j = 0; j < 32; ++j)
    x[64 + j] = (j == 0 ? 127.0f : static_cast<float>(j % 7) + 0.5f) * (j % 2 ? -1 : 1);
  x[96] = 1e30f;
  struct Prepared {
    std::vector<std::int8_t> q = std::vector<std::int8_t>(kN);
    std::vector<std::uint8_t> qabs = std::vector<std::uint8_t>(kN);
    std::vector<std::uint32_t> qneg = std::vector<std::uint32_t>(kN / 32);
    std::vector<float> d = std::vector<float>(kN / 32), sum8 = std::vector<float>(kN / 32);
  };
  const auto run = [&](internal::PrepareActFn fn) {
    Prepared p;
    fn(x.data(), kN, p.q.data(), p.qabs.data(), p.qneg.data(), p.d.data(), p.sum8.data());
    return p;
  };
  const Prepared want = run(internal::scalar::PrepareActQ8);
  std::vector<std::pair<const char*, internal::PrepareActFn>> others;
#if defined(__x86_64__)
  const core::CpuFeatures& f = core::GetCpuFeatures();
  if (f.HasAvx2()) others.emplace_back("avx2", internal::avx2::PrepareActQ8);
  if (f.HasAvx512() && f.avx512vnni)
    others.emplace_back("avx512vnni", internal::avx512vnni::PrepareActQ8);
#endif
  if (others.empty()) GTEST_SKIP() << "this CPU has no SIMD preparation";
  for (const auto& [name, fn] : others) {
    const Prepared got = run(fn);
    EXPECT_EQ(got.q, want.q) << name;
    EXPECT_EQ(got.qabs, want.qabs) << name;
    EXPECT_EQ(got.qneg, want.qneg) << name;
    for (std::int64_t b = 0; b < kN / 32; ++b) {
      EXPECT_EQ(std::memcmp(&got.d[b], &want.d[b], 4), 0) << name << " block " << b;
      EXPECT_EQ(std::memcmp(&got.sum8[b], &want.sum8[b], 4), 0) << name << " block " << b;
    }
  }
}

TEST(FastDotQ8, PreparedActivationsAreSharedWithinAPass) {
  std::mt19937 rng(10);
  core::ThreadPool pool(2);
  FastDotOn on;
  const Q8Matrix a = RandomQ8(rng, 96, 576), b = RandomQ8(rng, 40, 576);
  const Q8Matrix c = RandomQ4(rng, 33, 576), u = RandomQ4(rng, 96, 576);
  const std::vector<float> x = testing::RandomVector(rng, 576), x2 = testing::RandomVector(rng, 576);
  const WeightView va{GgmlType::kQ8_0, a.bytes.data(), 96, 576}, vb{GgmlType::kQ8_0, b.bytes.data(), 40, 576};
  const WeightView vc{GgmlType::kQ4_0, c.bytes.data(), 33, 576}, vu{GgmlType::kQ4_0, u.bytes.data(), 96, 576};
  std::vector<float> ya(96), yb(40), yc(33), wa(96), wb(40), wc(33);
  MatVec(va, x.data(), wa.data(), nullptr);
  MatVec(vb, x.data(), wb.data(), nullptr);
  MatVec(vc, x2.data(), wc.data(), nullptr);
  const MatJob jobs[] = {{&va, x.data(), ya.data()}, {&vb, x.data(), yb.data()}, {&vc, x2.data(), yc.data()}};
  MatVecMany(jobs, &pool);
  EXPECT_LT(testing::MaxRelError(ya.data(), wa.data(), 96), 1e-6);
  EXPECT_LT(testing::MaxRelError(yb.data(), wb.data(), 40), 1e-6);
  EXPECT_LT(testing::MaxRelError(yc.data(), wc.data(), 33), 1e-6);
  // gate Q8_0, up Q4_0: out = silu(gate x) * (up x).
  std::vector<float> g(96), up(96), want(96), got(96);
  MatVec(va, x.data(), g.data(), nullptr);
  MatVec(vu, x.data(), up.data(), nullptr);
  for (int i = 0; i < 96; ++i) want[i] = g[i] / (1.0f + std::exp(-g[i])) * up[i];
  MatMulSwiGlu(va, vu, x.data(), 1, got.data(), &pool);
  EXPECT_LT(testing::MaxRelError(got.data(), want.data(), 96), 1e-4);
}

// A decode batch (n tokens in one MatMul) goes through the same integer dots (from 3 tokens the
// batched kernels, 16 tokens per weight unpack): each row of the product equals the
// single-token MatVec of that token up to the order of the f32 sums.
TEST(FastDotQ8, BatchedTokensEqualSingleTokens) {
  std::mt19937 rng(11);
  core::ThreadPool pool(2);
  FastDotOn on;
  const Q8Matrix w8 = RandomQ8(rng, 200, 576);
  const Q8Matrix w4 = RandomQ4(rng, 200, 576);
  const Q8Matrix w5 = RandomQ4(rng, 200, 576, GgmlType::kQ5_0);
  const Q8Matrix wn = RandomQ4(rng, 200, 576, GgmlType::kIQ4_NL);
  const Q8Matrix w41 = RandomQ4(rng, 200, 576, GgmlType::kQ4_1);
  const Q8Matrix w51 = RandomQ4(rng, 200, 576, GgmlType::kQ5_1);
  const std::pair<GgmlType, const Q8Matrix*> mats[] = {
      {GgmlType::kQ8_0, &w8},   {GgmlType::kQ4_0, &w4},  {GgmlType::kQ5_0, &w5},
      {GgmlType::kIQ4_NL, &wn}, {GgmlType::kQ4_1, &w41}, {GgmlType::kQ5_1, &w51}};
  for (const std::int64_t n : {2, 5, 16, 17, 64, 130}) {  // 130: a prefill chunk
    const std::vector<float> x = testing::RandomVector(rng, static_cast<std::size_t>(n * 576));
    for (const auto& [type, m] : mats) {
      const WeightView v{type, m->bytes.data(), 200, 576};
      // A prefill chunk takes the integer dots only through the batched kernels (AVX-512 VNNI);
      // without them (SMARTGEN_ISA=avx2) it runs the exact f32 GEMM, by design.
      if (n > 64 && internal::FastDotBatchKernel(internal::ActiveKernels(), type) == nullptr)
        continue;
      std::vector<float> batched(static_cast<std::size_t>(n * 200)), one(200);
      MatMul(v, x.data(), n, batched.data(), &pool);
      for (std::int64_t t = 0; t < n; ++t) {
        MatVec(v, x.data() + t * 576, one.data(), nullptr);
        EXPECT_LT(testing::MaxRelError(batched.data() + t * 200, one.data(), 200), 1e-5) << n << " " << t;
      }
    }
  }
}

struct Bf16Matrix {
  std::vector<std::byte> bytes;
  std::vector<float> values;  // rows x cols, exactly the stored bf16
};

Bf16Matrix RandomBf16(std::mt19937& rng, std::int64_t rows, std::int64_t cols) {
  Bf16Matrix m{std::vector<std::byte>(static_cast<std::size_t>(rows * cols) * 2), {}};
  const std::vector<float> v = testing::RandomVector(rng, static_cast<std::size_t>(rows * cols));
  EXPECT_TRUE(QuantizeRow(GgmlType::kBF16, v.data(), m.bytes.data(), rows * cols));
  const auto* h = reinterpret_cast<const bf16_t*>(m.bytes.data());
  for (std::int64_t i = 0; i < rows * cols; ++i) m.values.push_back(Bf16ToF32(h[i]));
  return m;
}

TEST(FastDotBf16, ScalarTwinIsWithinTheActivationRounding) {
  std::mt19937 rng(6);
  const auto* scalar = internal::GetKernelTable(internal::Isa::kScalar);
  for (const auto& [rows, cols] : kDotShapes) {
    const Bf16Matrix w = RandomBf16(rng, rows, cols);
    const std::vector<float> x = testing::RandomVector(rng, cols);
    std::vector<float> got(rows), exact(rows);
    ASSERT_TRUE(internal::MatVecWith(*scalar, GgmlType::kBF16, w.bytes.data(), rows, cols, x.data(),
                                     exact.data(), nullptr));
    {
      FastDotOn on;
      ASSERT_TRUE(internal::MatVecWith(*scalar, GgmlType::kBF16, w.bytes.data(), rows, cols,
                                       x.data(), got.data(), nullptr));
    }
    bool any_differs = false;
    for (std::int64_t r = 0; r < rows; ++r) {
      // bf16 keeps 8 significant bits: each activation moves by at most 2^-9 of itself.
      double bound = 1e-4;
      for (std::int64_t k = 0; k < cols; ++k) bound += std::fabs(w.values[r * cols + k] * x[k]) / 512.0;
      EXPECT_LE(std::fabs(got[r] - exact[r]), bound) << rows << "x" << cols << " row " << r;
      any_differs = any_differs || got[r] != exact[r];
    }
    EXPECT_TRUE(any_differs) << "the bf16 path was not taken";
  }
}

TEST(FastDotBf16, Avx512Bf16KernelEqualsTheScalarTwin) {
  const core::CpuFeatures& f = core::GetCpuFeatures();
  if (!f.HasAvx512() || !f.avx512bf16) GTEST_SKIP() << "this CPU has no AVX512-BF16";
  // The same bf16 products; vdpbf16ps sums pairs and lanes in another order.
  ExpectAvx512EqualsTwin(GgmlType::kBF16, 7, [](std::mt19937& rng, std::int64_t rows, std::int64_t cols) {
    return RandomBf16(rng, rows, cols).bytes;
  });
}

// Prefill-sized products (from 32 tokens) of BF16 weights: the AVX512-BF16 GEMM against its
// token-by-token twin, over row blocks past the GEMM's 512, column tails past its 256-column
// block, token tails past its 12-token micro-kernel and row counts that are no multiple of 32.
TEST(FastDotBf16, Avx512Bf16GemmEqualsTheScalarTwin) {
  const core::CpuFeatures& f = core::GetCpuFeatures();
  if (!f.HasAvx512() || !f.avx512bf16) GTEST_SKIP() << "this CPU has no AVX512-BF16";
  std::mt19937 rng(9);
  core::ThreadPool pool(2);
  const auto* scalar = internal::GetKernelTable(internal::Isa::kScalar);
  const auto* avx512 = internal::GetKernelTable(internal::Isa::kAvx512);
  const std::int64_t shapes[][3] = {{33, 96, 32}, {70, 576, 45}, {600, 256, 130}, {40, 544, 37},
                                    {17, 4864, 33}, {64, 64, 5}};
  for (const auto& [rows, cols, n] : shapes) {
    const Bf16Matrix w = RandomBf16(rng, rows, cols);
    const std::vector<float> x = testing::RandomVector(rng, static_cast<std::size_t>(n * cols));
    std::vector<float> want(rows * n), got(rows * n, -1e30f), exact(rows * n);
    ASSERT_TRUE(internal::MatMulWith(*avx512, GgmlType::kBF16, w.bytes.data(), rows, cols, x.data(), n,
                                     exact.data(), &pool));
    {
      FastDotOn on;
      ASSERT_TRUE(internal::MatMulWith(*scalar, GgmlType::kBF16, w.bytes.data(), rows, cols, x.data(),
                                       n, want.data(), nullptr));
      ASSERT_TRUE(internal::MatMulWith(*avx512, GgmlType::kBF16, w.bytes.data(), rows, cols, x.data(),
                                       n, got.data(), &pool));
    }
    // The same bf16 products summed in another order (per 256-column block, then across blocks):
    // 4864 of them differ from the sequential sum by up to 3e-5; a misplaced product, by O(1).
    EXPECT_LT(testing::MaxRelError(got.data(), want.data(), rows * n), 1e-4) << rows << "x" << cols << " n " << n;
    if (n >= 32) {
      EXPECT_NE(got, exact) << "the bf16 path was not taken";
    } else {
      EXPECT_EQ(got, exact) << "fewer than 32 tokens take the exact kernels";
    }
  }
}

}  // namespace
}  // namespace smartgen::kernels
