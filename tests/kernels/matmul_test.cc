#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "kernel_test_util.h"
#include "kernels/elementwise.h"
#include "kernels/quant.h"

namespace smartgen::kernels {
namespace {

using gguf::GgmlType;

using testing::MakeWeights;
using testing::Weights;

// Summation order differs between kernels: allow rounding that grows with the dot length
// (a wrong or missing term is off by ~0.1 or more).
double Tolerance(std::int64_t cols) {
  return 2e-6 * static_cast<double>(cols);
}

const GgmlType kTypes[] = {GgmlType::kF32,  GgmlType::kF16,   GgmlType::kBF16,  GgmlType::kQ8_0,
                           GgmlType::kQ4_0, GgmlType::kQ4_K,  GgmlType::kQ6_K,  GgmlType::kQ4_1,
                           GgmlType::kQ5_0, GgmlType::kQ5_1,  GgmlType::kQ2_K,  GgmlType::kQ3_K,
                           GgmlType::kQ5_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS};

// `cols` rounded up to whole blocks of `type` (256 for the K-quants).
std::int64_t ColsFor(GgmlType type, std::int64_t cols) {
  const std::int64_t b = gguf::GetTypeInfo(type).block_size;
  return (cols + b - 1) / b * b;
}

// Shapes with odd row counts (tails of every row block) and columns that are multiples of 32
// (the last, 100, gives the plain types a scalar column tail; ColsFor rounds it up for the rest);
// the small batches (n < 16) cover every token group of the plain types' small-batch kernel
// (4, 2 and 1 tokens) on whole 16-row blocks.
struct Shape {
  std::int64_t rows, cols, n;
};
const Shape kShapes[] = {{1, 32, 2},    {7, 64, 3},     {17, 96, 5},   {33, 160, 8},
                         {64, 576, 13}, {130, 224, 31}, {45, 1536, 4}, {257, 64, 67},
                         {48, 96, 6},   {32, 64, 2},    {40, 160, 15}, {9, 100, 3}};

TEST(MatVec, EveryIsaMatchesReference) {
  std::mt19937 rng(1);
  core::ThreadPool pool(2);
  for (GgmlType type : kTypes) {
    for (const Shape& s : kShapes) {
      const std::int64_t cols = ColsFor(type, s.cols);
      Weights w = MakeWeights(rng, type, s.rows, cols);
      std::vector<float> x = testing::RandomVector(rng, cols);
      std::vector<float> want(s.rows);
      MatVecReference(w.view, x.data(), want.data());
      for (const auto* table : testing::AvailableTables()) {
        for (core::ThreadPool* p : {static_cast<core::ThreadPool*>(nullptr), &pool}) {
          std::vector<float> got(s.rows, -1e30f);
          ASSERT_TRUE(internal::MatVecWith(*table, type, w.view.data, s.rows, cols, x.data(),
                                           got.data(), p));
          // Dots of |x|,|w| <= 1 over `cols` terms: error grows with sqrt(cols) ulps.
          EXPECT_LT(testing::MaxRelError(got.data(), want.data(), s.rows), Tolerance(cols))
              << internal::IsaName(table->isa) << " " << gguf::GetTypeInfo(type).name << " rows "
              << s.rows << " cols " << cols;
        }
      }
    }
  }
}

TEST(MatMul, EveryIsaMatchesReference) {
  std::mt19937 rng(2);
  core::ThreadPool pool(2);
  for (GgmlType type : kTypes) {
    for (const Shape& s : kShapes) {
      const std::int64_t cols = ColsFor(type, s.cols);
      Weights w = MakeWeights(rng, type, s.rows, cols);
      std::vector<float> x = testing::RandomVector(rng, cols * s.n);
      std::vector<float> want(s.rows * s.n);
      MatMulReference(w.view, x.data(), s.n, want.data());
      for (const auto* table : testing::AvailableTables()) {
        for (core::ThreadPool* p : {static_cast<core::ThreadPool*>(nullptr), &pool}) {
          std::vector<float> got(s.rows * s.n, -1e30f);
          ASSERT_TRUE(internal::MatMulWith(*table, type, w.view.data, s.rows, cols, x.data(), s.n,
                                           got.data(), p));
          EXPECT_LT(testing::MaxRelError(got.data(), want.data(), got.size()), Tolerance(cols))
              << internal::IsaName(table->isa) << " " << gguf::GetTypeInfo(type).name << " rows "
              << s.rows << " cols " << cols << " n " << s.n;
        }
      }
    }
  }
}

TEST(MatMul, ReferenceMatchesPerTokenMatVec) {
  std::mt19937 rng(3);
  Weights w = MakeWeights(rng, GgmlType::kQ8_0, 9, 64);
  std::vector<float> x = testing::RandomVector(rng, 64 * 3);
  std::vector<float> y(9 * 3), y1(9);
  MatMulReference(w.view, x.data(), 3, y.data());
  for (int t = 0; t < 3; ++t) {
    MatVecReference(w.view, x.data() + 64 * t, y1.data());
    for (int r = 0; r < 9; ++r) EXPECT_EQ(y[t * 9 + r], y1[r]);
  }
}

TEST(MatMul, PublicEntryPointsUseActiveTable) {
  std::mt19937 rng(4);
  Weights w = MakeWeights(rng, GgmlType::kF16, 40, 128);
  std::vector<float> x = testing::RandomVector(rng, 128 * 6);
  std::vector<float> want(40 * 6), got(40 * 6);
  MatMulReference(w.view, x.data(), 6, want.data());
  MatMul(w.view, x.data(), 6, got.data(), nullptr);
  EXPECT_LT(testing::MaxRelError(got.data(), want.data(), got.size()), Tolerance(128));
  MatVec(w.view, x.data(), got.data(), nullptr);
  EXPECT_LT(testing::MaxRelError(got.data(), want.data(), 40), Tolerance(128));
}

TEST(MatMulMany, EveryIsaMatchesSeparateProductsWithAccumulate) {
  // q/k/v-like jobs of different types sharing an input, the last one accumulating (the fused
  // residual add), at decode (n = 1), small and large prefill (token chunks) sizes.
  std::mt19937 rng(5);
  core::ThreadPool pool(3);
  const std::int64_t cols = 96;
  Weights a = MakeWeights(rng, GgmlType::kF32, 70, cols);
  Weights b = MakeWeights(rng, GgmlType::kQ8_0, 33, cols);
  Weights c = MakeWeights(rng, GgmlType::kF16, 200, cols);
  for (std::int64_t n : {1, 3, 37, 600}) {
    std::vector<float> x = testing::RandomVector(rng, cols * n);
    std::vector<float> base = testing::RandomVector(rng, 200 * n);
    std::vector<float> want_a(70 * n), want_b(33 * n), want_c(200 * n);
    MatMulReference(a.view, x.data(), n, want_a.data());
    MatMulReference(b.view, x.data(), n, want_b.data());
    MatMulReference(c.view, x.data(), n, want_c.data());
    for (std::size_t i = 0; i < want_c.size(); ++i) want_c[i] += base[i];
    for (const auto* table : testing::AvailableTables()) {
      for (core::ThreadPool* p : {static_cast<core::ThreadPool*>(nullptr), &pool}) {
        std::vector<float> got_a(70 * n), got_b(33 * n), got_c = base;
        const MatJob jobs[] = {{&a.view, x.data(), got_a.data()},
                               {&b.view, x.data(), got_b.data()},
                               {&c.view, x.data(), got_c.data(), true}};
        ASSERT_TRUE(internal::MatMulManyWith(*table, jobs, n, p));
        const std::string where = std::string(internal::IsaName(table->isa)) + " n " +
                                  std::to_string(n) + (p ? " pool" : "");
        EXPECT_LT(testing::MaxRelError(got_a.data(), want_a.data(), got_a.size()), Tolerance(cols))
            << where;
        EXPECT_LT(testing::MaxRelError(got_b.data(), want_b.data(), got_b.size()), Tolerance(cols))
            << where;
        EXPECT_LT(testing::MaxRelError(got_c.data(), want_c.data(), got_c.size()), Tolerance(cols))
            << where;
      }
    }
  }
}

TEST(MatMulSwiGlu, EveryIsaMatchesSwiGluOfProducts) {
  std::mt19937 rng(6);
  core::ThreadPool pool(2);
  const std::int64_t rows = 150, cols = 64;
  Weights gate = MakeWeights(rng, GgmlType::kQ8_0, rows, cols);
  Weights up = MakeWeights(rng, GgmlType::kF16, rows, cols);
  for (std::int64_t n : {1, 2, 45, 300}) {
    std::vector<float> x = testing::RandomVector(rng, cols * n);
    std::vector<float> g(rows * n), u(rows * n), want(rows * n);
    MatMulReference(gate.view, x.data(), n, g.data());
    MatMulReference(up.view, x.data(), n, u.data());
    SwiGluReference(g.data(), u.data(), rows * n, want.data());
    for (const auto* table : testing::AvailableTables()) {
      for (core::ThreadPool* p : {static_cast<core::ThreadPool*>(nullptr), &pool}) {
        std::vector<float> got(rows * n, -1e30f);
        ASSERT_TRUE(internal::MatMulSwiGluWith(*table, gate.view, up.view, x.data(), n,
                                               got.data(), p));
        EXPECT_LT(testing::MaxRelError(got.data(), want.data(), got.size()), Tolerance(cols))
            << internal::IsaName(table->isa) << " n " << n;
      }
    }
  }
  Weights wrong = MakeWeights(rng, GgmlType::kF32, rows + 1, cols);
  std::vector<float> x(cols), out(rows + 1);
  EXPECT_FALSE(internal::MatMulSwiGluWith(internal::ActiveKernels(), gate.view, wrong.view,
                                          x.data(), 1, out.data(), nullptr));
}

TEST(MatMulGeGlu, EveryIsaMatchesGeGluOfProducts) {
  std::mt19937 rng(16);
  core::ThreadPool pool(2);
  const std::int64_t rows = 70, cols = 256;
  Weights gate = MakeWeights(rng, GgmlType::kQ5_K, rows, cols);
  Weights up = MakeWeights(rng, GgmlType::kQ4_1, rows, cols);
  for (std::int64_t n : {1, 3, 40}) {
    std::vector<float> x = testing::RandomVector(rng, cols * n);
    std::vector<float> g(rows * n), u(rows * n), want(rows * n);
    MatMulReference(gate.view, x.data(), n, g.data());
    MatMulReference(up.view, x.data(), n, u.data());
    GeGluReference(g.data(), u.data(), rows * n, want.data());
    for (const auto* table : testing::AvailableTables()) {
      for (core::ThreadPool* p : {static_cast<core::ThreadPool*>(nullptr), &pool}) {
        std::vector<float> got(rows * n, -1e30f);
        ASSERT_TRUE(internal::MatMulGeGluWith(*table, gate.view, up.view, x.data(), n,
                                              got.data(), p));
        EXPECT_LT(testing::MaxRelError(got.data(), want.data(), got.size()), Tolerance(cols))
            << internal::IsaName(table->isa) << " n " << n;
      }
    }
  }
}

TEST(MatVec, RejectsUnsupportedType) {
  const auto& table = internal::ActiveKernels();
  float x[256] = {}, y[1] = {};
  std::byte w[256] = {};
  EXPECT_FALSE(internal::MatVecWith(table, GgmlType::kQ8_K, w, 1, 256, x, y, nullptr));
}

}  // namespace
}  // namespace smartgen::kernels

namespace smartgen::kernels {
namespace {

TEST(KernelTables, EverySupportedIsaHasATable) {
  // The SIMD tables must exist where the CPU runs them, or the SIMD tests test nothing.
  const core::CpuFeatures& f = core::GetCpuFeatures();
  EXPECT_NE(internal::GetKernelTable(internal::Isa::kScalar), nullptr);
#if defined(__x86_64__)
  EXPECT_EQ(internal::GetKernelTable(internal::Isa::kAvx2) != nullptr, f.HasAvx2());
  EXPECT_EQ(internal::GetKernelTable(internal::Isa::kAvx512) != nullptr, f.HasAvx512());
#endif
  EXPECT_EQ(internal::ActiveKernels().isa, testing::AvailableTables().back()->isa);
  std::printf("kernel tables: ");
  for (const auto* t : testing::AvailableTables()) std::printf("%s ", internal::IsaName(t->isa));
  std::printf("(cpu: %s)\n", f.ToString().c_str());
}

}  // namespace
}  // namespace smartgen::kernels

namespace smartgen::kernels {
namespace {

TEST(MatMulMany, EqualsEachProductAlone) {
  std::mt19937 rng(9);
  core::ThreadPool pool(2);
  // Ten jobs (more than one pass of the segment batching), mixed types and shapes.
  const GgmlType types[] = {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0};
  for (std::int64_t n : {1, 2, 7, 20}) {
    std::vector<Weights> ws;
    std::vector<std::vector<float>> xs, ys, wants;
    for (int i = 0; i < 10; ++i) {
      const std::int64_t rows = 5 + 23 * i, cols = 32 * (1 + i % 3);
      ws.push_back(MakeWeights(rng, types[i % 4], rows, cols));
      xs.push_back(testing::RandomVector(rng, n * cols));
      ys.emplace_back(n * rows, -1e30f);
      wants.emplace_back(n * rows);
      MatMulReference(ws.back().view, xs.back().data(), n, wants.back().data());
    }
    std::vector<MatJob> jobs;
    for (int i = 0; i < 10; ++i) jobs.push_back({&ws[i].view, xs[i].data(), ys[i].data()});
    for (core::ThreadPool* p : {static_cast<core::ThreadPool*>(nullptr), &pool}) {
      if (n == 1) {
        MatVecMany(jobs, p);
      } else {
        MatMulMany(jobs, n, p);
      }
      for (int i = 0; i < 10; ++i) {
        EXPECT_LT(testing::MaxRelError(ys[i].data(), wants[i].data(), ys[i].size()),
                  Tolerance(ws[i].view.cols))
            << "job " << i << " n " << n;
      }
    }
  }
}

}  // namespace
}  // namespace smartgen::kernels
