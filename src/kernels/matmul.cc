// Dispatch and threading of the matrix kernels, their scalar references, and the scalar table
// entries (which are the references, split by rows).
#include "kernels/matmul.h"

#include <algorithm>
#include <cassert>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/quant.h"

namespace smartgen::kernels {
namespace internal {
namespace {

int KindIndex(gguf::GgmlType type) {
  switch (type) {
    case gguf::GgmlType::kF32:
      return static_cast<int>(WeightKind::kF32);
    case gguf::GgmlType::kF16:
      return static_cast<int>(WeightKind::kF16);
    case gguf::GgmlType::kBF16:
      return static_cast<int>(WeightKind::kBF16);
    case gguf::GgmlType::kQ8_0:
      return static_cast<int>(WeightKind::kQ8_0);
    default:
      return -1;
  }
}

float Dot(const float* a, const float* b, std::int64_t n) {
  float sum = 0.0f;
  for (std::int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

template <gguf::GgmlType kType>
void ScalarMatVec(const void* w, std::size_t row_bytes, std::int64_t cols, const float* x, float* y,
                  std::int64_t r0, std::int64_t r1) {
  float* row = ThreadScratch(0, static_cast<std::size_t>(cols));
  for (std::int64_t r = r0; r < r1; ++r) {
    DequantizeRow(kType, static_cast<const std::byte*>(w) + r * row_bytes, row, cols);
    y[r] = Dot(row, x, cols);
  }
}

template <gguf::GgmlType kType>
void ScalarMatMul(const void* w, std::size_t row_bytes, std::int64_t cols, const float* x,
                  std::int64_t n, float* y, std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  float* row = ThreadScratch(0, static_cast<std::size_t>(cols));
  for (std::int64_t r = r0; r < r1; ++r) {
    DequantizeRow(kType, static_cast<const std::byte*>(w) + r * row_bytes, row, cols);
    for (std::int64_t t = 0; t < n; ++t) y[t * ldy + r] = Dot(row, x + t * cols, cols);
  }
}

// Rows handed to one thread at a time are a multiple of this (SIMD kernels block rows).
constexpr std::int64_t kRowGrain = 16;

template <typename Fn>
void SplitRows(std::int64_t rows, core::ThreadPool* pool, Fn&& fn) {
  if (pool == nullptr || pool->size() == 1 || rows < 2 * kRowGrain) {
    fn(0, rows);
    return;
  }
  const std::int64_t chunks = (rows + kRowGrain - 1) / kRowGrain;
  pool->Run([&](int t, int nt) {
    const auto [c0, c1] = core::ThreadPool::SplitRange(chunks, t, nt);
    const std::int64_t r0 = c0 * kRowGrain;
    const std::int64_t r1 = std::min(rows, c1 * kRowGrain);
    if (r0 < r1) fn(r0, r1);
  });
}

}  // namespace

namespace scalar {
void MatVecF32(const void* w, std::size_t rb, std::int64_t c, const float* x, float* y,
               std::int64_t r0, std::int64_t r1) {
  ScalarMatVec<gguf::GgmlType::kF32>(w, rb, c, x, y, r0, r1);
}
void MatVecF16(const void* w, std::size_t rb, std::int64_t c, const float* x, float* y,
               std::int64_t r0, std::int64_t r1) {
  ScalarMatVec<gguf::GgmlType::kF16>(w, rb, c, x, y, r0, r1);
}
void MatVecBF16(const void* w, std::size_t rb, std::int64_t c, const float* x, float* y,
                std::int64_t r0, std::int64_t r1) {
  ScalarMatVec<gguf::GgmlType::kBF16>(w, rb, c, x, y, r0, r1);
}
void MatVecQ8_0(const void* w, std::size_t rb, std::int64_t c, const float* x, float* y,
                std::int64_t r0, std::int64_t r1) {
  ScalarMatVec<gguf::GgmlType::kQ8_0>(w, rb, c, x, y, r0, r1);
}
void MatMulF32(const void* w, std::size_t rb, std::int64_t c, const float* x, std::int64_t n,
               float* y, std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  ScalarMatMul<gguf::GgmlType::kF32>(w, rb, c, x, n, y, ldy, r0, r1);
}
void MatMulF16(const void* w, std::size_t rb, std::int64_t c, const float* x, std::int64_t n,
               float* y, std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  ScalarMatMul<gguf::GgmlType::kF16>(w, rb, c, x, n, y, ldy, r0, r1);
}
void MatMulBF16(const void* w, std::size_t rb, std::int64_t c, const float* x, std::int64_t n,
                float* y, std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  ScalarMatMul<gguf::GgmlType::kBF16>(w, rb, c, x, n, y, ldy, r0, r1);
}
void MatMulQ8_0(const void* w, std::size_t rb, std::int64_t c, const float* x, std::int64_t n,
                float* y, std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  ScalarMatMul<gguf::GgmlType::kQ8_0>(w, rb, c, x, n, y, ldy, r0, r1);
}
}  // namespace scalar

bool MatVecWith(const KernelTable& table, gguf::GgmlType type, const void* w, std::int64_t rows,
                std::int64_t cols, const float* x, float* y, core::ThreadPool* pool) {
  const int kind = KindIndex(type);
  if (kind < 0 || table.mat_vec[kind] == nullptr) return false;
  const MatVecFn fn = table.mat_vec[kind];
  const std::size_t row_bytes = gguf::RowBytes(type, cols);
  SplitRows(rows, pool,
            [&](std::int64_t r0, std::int64_t r1) { fn(w, row_bytes, cols, x, y, r0, r1); });
  return true;
}

bool MatMulWith(const KernelTable& table, gguf::GgmlType type, const void* w, std::int64_t rows,
                std::int64_t cols, const float* x, std::int64_t n, float* y,
                core::ThreadPool* pool) {
  const int kind = KindIndex(type);
  if (kind < 0 || table.mat_mul[kind] == nullptr) return false;
  if (n == 1) return MatVecWith(table, type, w, rows, cols, x, y, pool);
  const MatMulFn fn = table.mat_mul[kind];
  const std::size_t row_bytes = gguf::RowBytes(type, cols);
  SplitRows(rows, pool, [&](std::int64_t r0, std::int64_t r1) {
    fn(w, row_bytes, cols, x, n, y, rows, r0, r1);
  });
  return true;
}

}  // namespace internal

void MatVec(const WeightView& w, const float* x, float* y, core::ThreadPool* pool) {
  [[maybe_unused]] const bool ok =
      internal::MatVecWith(internal::ActiveKernels(), w.type, w.data, w.rows, w.cols, x, y, pool);
  assert(ok && "MatVec: unsupported weight type");
}

void MatMul(const WeightView& w, const float* x, std::int64_t n, float* y, core::ThreadPool* pool) {
  [[maybe_unused]] const bool ok = internal::MatMulWith(internal::ActiveKernels(), w.type, w.data,
                                                        w.rows, w.cols, x, n, y, pool);
  assert(ok && "MatMul: unsupported weight type");
}

void MatVecReference(const WeightView& w, const float* x, float* y) {
  std::vector<float> row(static_cast<std::size_t>(w.cols));
  for (std::int64_t r = 0; r < w.rows; ++r) {
    DequantizeRow(w.type, w.row(r), row.data(), w.cols);
    y[r] = internal::Dot(row.data(), x, w.cols);
  }
}

void MatMulReference(const WeightView& w, const float* x, std::int64_t n, float* y) {
  std::vector<float> row(static_cast<std::size_t>(w.cols));
  for (std::int64_t r = 0; r < w.rows; ++r) {
    DequantizeRow(w.type, w.row(r), row.data(), w.cols);
    for (std::int64_t t = 0; t < n; ++t) {
      y[t * w.rows + r] = internal::Dot(row.data(), x + t * w.cols, w.cols);
    }
  }
}

}  // namespace smartgen::kernels
