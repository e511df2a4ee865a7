// The public matrix kernels (matmul.h) on top of the pass engine (matmul_pass.h), their scalar
// references, and the scalar table entries (which are the references, split by rows).
#include "kernels/matmul.h"

#include <algorithm>
#include <cassert>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/matmul_pass.h"
#include "kernels/q5_0_groups.h"
#include "kernels/q8_0_groups.h"
#include "kernels/quant.h"

namespace smartgen::kernels {
namespace internal {
namespace {

float Dot(const float* a, const float* b, std::int64_t n) {
  float sum = 0.0f;
  for (std::int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// The scalar table's dot: 8 independent partial sums, which the compiler can keep in SSE
// registers (the references keep the sequential order).
float DotPartials(const float* a, const float* b, std::int64_t n) {
  float part[8] = {};
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) part[j] += a[i + j] * b[i + j];
  }
  for (; i < n; ++i) part[0] += a[i] * b[i];
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

template <gguf::GgmlType kType>
void ScalarMatVec(const void* w, std::size_t row_bytes, std::int64_t cols, const float* x, float* y,
                  std::int64_t r0, std::int64_t r1) {
  float* row = ThreadScratch(0, static_cast<std::size_t>(cols));
  for (std::int64_t r = r0; r < r1; ++r) {
    DequantizeRow(kType, static_cast<const std::byte*>(w) + r * row_bytes, row, cols);
    y[r] = DotPartials(row, x, cols);
  }
}

template <gguf::GgmlType kType>
void ScalarMatMul(const void* w, std::size_t row_bytes, std::int64_t cols, const float* x,
                  std::int64_t n, float* y, std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  float* row = ThreadScratch(0, static_cast<std::size_t>(cols));
  for (std::int64_t r = r0; r < r1; ++r) {
    DequantizeRow(kType, static_cast<const std::byte*>(w) + r * row_bytes, row, cols);
    for (std::int64_t t = 0; t < n; ++t) y[t * ldy + r] = DotPartials(row, x + t * cols, cols);
  }
}

}  // namespace

namespace scalar {
#define SMARTGEN_SCALAR_KIND(Name)                                                            \
  void MatVec##Name(const void* w, std::size_t rb, std::int64_t c, const float* x, float* y,  \
                    std::int64_t r0, std::int64_t r1) {                                       \
    ScalarMatVec<gguf::GgmlType::k##Name>(w, rb, c, x, y, r0, r1);                            \
  }                                                                                           \
  void MatMul##Name(const void* w, std::size_t rb, std::int64_t c, const float* x,            \
                    std::int64_t n, float* y, std::int64_t ldy, std::int64_t r0,              \
                    std::int64_t r1) {                                                        \
    ScalarMatMul<gguf::GgmlType::k##Name>(w, rb, c, x, n, y, ldy, r0, r1);                    \
  }
SMARTGEN_SCALAR_KIND(F32)
SMARTGEN_SCALAR_KIND(F16)
SMARTGEN_SCALAR_KIND(BF16)
SMARTGEN_SCALAR_KIND(Q8_0)
SMARTGEN_SCALAR_KIND(Q4_0)
SMARTGEN_SCALAR_KIND(Q4_K)
SMARTGEN_SCALAR_KIND(Q6_K)
SMARTGEN_SCALAR_KIND(Q4_1)
SMARTGEN_SCALAR_KIND(Q5_0)
SMARTGEN_SCALAR_KIND(Q5_1)
SMARTGEN_SCALAR_KIND(Q2_K)
SMARTGEN_SCALAR_KIND(Q3_K)
SMARTGEN_SCALAR_KIND(Q5_K)
SMARTGEN_SCALAR_KIND(IQ4_NL)
SMARTGEN_SCALAR_KIND(IQ4_XS)
#undef SMARTGEN_SCALAR_KIND
}  // namespace scalar

bool MatMulManyWith(const KernelTable& table, std::span<const MatJob> jobs, std::int64_t n,
                    core::ThreadPool* pool, const NextPass* next) {
  for (const MatJob& j : jobs) {
    if (!HasKernels(table, j.w->type)) return false;
  }
  if (n <= 0) return true;
  for (std::size_t begin = 0; begin < jobs.size(); begin += kMaxSegments) {
    Segment segs[kMaxSegments];
    int n_segs = 0;
    for (std::size_t i = begin; i < std::min(jobs.size(), begin + kMaxSegments); ++i) {
      segs[n_segs++] = MakeSegment(table, *jobs[i].w, jobs[i].x, jobs[i].y,
                                   jobs[i].accumulate ? Epilogue::kAccumulate : Epilogue::kStore);
    }
    // Only the last pass is followed by `next`.
    const bool last = begin + kMaxSegments >= jobs.size();
    RunSegments(table, segs, n_segs, n, pool, last ? next : nullptr);
  }
  return true;
}

namespace {
bool MatMulGated(const KernelTable& table, SwiGluFn gated, const WeightView& gate,
                 const WeightView& up, const float* x, std::int64_t n, float* out,
                 core::ThreadPool* pool, const NextPass* next) {
  if (!HasKernels(table, gate.type) || !HasKernels(table, up.type) || gate.rows != up.rows ||
      gate.cols != up.cols) {
    return false;
  }
  if (n <= 0) return true;
  // Each projection picks its kernel in Product; both read the one prepared input.
  Segment s = MakeGatedSegment(table, gate, up, x, out, gated);
  RunSegments(table, &s, 1, n, pool, next);
  return true;
}
}  // namespace

bool MatMulSwiGluWith(const KernelTable& table, const WeightView& gate, const WeightView& up,
                      const float* x, std::int64_t n, float* out, core::ThreadPool* pool,
                      const NextPass* next) {
  return MatMulGated(table, table.swiglu, gate, up, x, n, out, pool, next);
}

bool MatMulGeGluWith(const KernelTable& table, const WeightView& gate, const WeightView& up,
                     const float* x, std::int64_t n, float* out, core::ThreadPool* pool,
                     const NextPass* next) {
  return MatMulGated(table, table.geglu, gate, up, x, n, out, pool, next);
}

bool MatVecWith(const KernelTable& table, gguf::GgmlType type, const void* w, std::int64_t rows,
                std::int64_t cols, const float* x, float* y, core::ThreadPool* pool) {
  return MatMulWith(table, type, w, rows, cols, x, 1, y, pool);
}

bool MatMulWith(const KernelTable& table, gguf::GgmlType type, const void* w, std::int64_t rows,
                std::int64_t cols, const float* x, std::int64_t n, float* y,
                core::ThreadPool* pool) {
  const WeightView view{type, w, rows, cols};
  const MatJob job{&view, x, y};
  return MatMulManyWith(table, std::span<const MatJob>(&job, 1), n, pool);
}

}  // namespace internal

void MatVec(const WeightView& w, const float* x, float* y, core::ThreadPool* pool) {
  const MatJob job{&w, x, y};
  [[maybe_unused]] const bool ok =
      internal::MatMulManyWith(internal::ActiveKernels(), std::span<const MatJob>(&job, 1), 1, pool);
  assert(ok && "MatVec: unsupported weight type");
}

void MatMul(const WeightView& w, const float* x, std::int64_t n, float* y, core::ThreadPool* pool,
            const NextPass& next) {
  const MatJob job{&w, x, y};
  [[maybe_unused]] const bool ok = internal::MatMulManyWith(
      internal::ActiveKernels(), std::span<const MatJob>(&job, 1), n, pool, &next);
  assert(ok && "MatMul: unsupported weight type");
}

void MatVecMany(std::span<const MatJob> jobs, core::ThreadPool* pool) {
  MatMulMany(jobs, 1, pool);
}

void MatMulMany(std::span<const MatJob> jobs, std::int64_t n, core::ThreadPool* pool,
                const NextPass& next) {
  [[maybe_unused]] const bool ok =
      internal::MatMulManyWith(internal::ActiveKernels(), jobs, n, pool, &next);
  assert(ok && "MatMulMany: unsupported weight type");
}

void MatMulSwiGlu(const WeightView& gate, const WeightView& up, const float* x, std::int64_t n,
                  float* out, core::ThreadPool* pool, const NextPass& next) {
  [[maybe_unused]] const bool ok =
      internal::MatMulSwiGluWith(internal::ActiveKernels(), gate, up, x, n, out, pool, &next);
  assert(ok && "MatMulSwiGlu: unsupported weight types or shapes");
}

void MatMulGeGlu(const WeightView& gate, const WeightView& up, const float* x, std::int64_t n,
                 float* out, core::ThreadPool* pool, const NextPass& next) {
  [[maybe_unused]] const bool ok =
      internal::MatMulGeGluWith(internal::ActiveKernels(), gate, up, x, n, out, pool, &next);
  assert(ok && "MatMulGeGlu: unsupported weight types or shapes");
}

void DequantizeViewRow(const WeightView& w, std::int64_t r, float* out, std::vector<std::byte>* file_row) {
  const std::byte* bytes = w.row(r);
  if (w.layout != WeightLayout::kFile) {
    file_row->resize(w.row_bytes());
    if (w.layout == WeightLayout::kQ5_0Groups) UngroupQ5_0Rows(bytes, file_row->data(), 1, w.cols);
    if (w.layout == WeightLayout::kQ8_0Groups) UngroupQ8_0Rows(bytes, file_row->data(), 1, w.cols);
    bytes = file_row->data();
  }
  DequantizeRow(w.type, bytes, out, w.cols);
}

void MatVecReference(const WeightView& w, const float* x, float* y) {
  std::vector<float> row(static_cast<std::size_t>(w.cols));
  std::vector<std::byte> file_row;
  for (std::int64_t r = 0; r < w.rows; ++r) {
    DequantizeViewRow(w, r, row.data(), &file_row);
    y[r] = internal::Dot(row.data(), x, w.cols);
  }
}

void MatMulReference(const WeightView& w, const float* x, std::int64_t n, float* y) {
  std::vector<float> row(static_cast<std::size_t>(w.cols));
  std::vector<std::byte> file_row;
  for (std::int64_t r = 0; r < w.rows; ++r) {
    DequantizeViewRow(w, r, row.data(), &file_row);
    for (std::int64_t t = 0; t < n; ++t) {
      y[t * w.rows + r] = internal::Dot(row.data(), x + t * w.cols, w.cols);
    }
  }
}

}  // namespace smartgen::kernels
