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

// Rows handed to one thread at a time are a multiple of this (SIMD kernels block rows).
constexpr std::int64_t kRowGrain = 16;

// One matrix product as the row-split loop sees it.
struct Segment {
  MatVecFn vec;
  MatMulFn mul;
  const void* w;
  std::size_t row_bytes;
  std::int64_t rows, cols;
  const float* x;
  float* y;
  std::int64_t first_chunk;  // in the concatenated chunk space of all segments
};

// Runs up to kMaxSegments products of n tokens in one parallel pass: the rows of all of them,
// in chunks of kRowGrain, are split into one contiguous range per thread.
constexpr int kMaxSegments = 8;
void RunSegments(const Segment* segs, int n_segs, std::int64_t n, core::ThreadPool* pool) {
  std::int64_t total_chunks = 0, total_rows = 0;
  for (int i = 0; i < n_segs; ++i) {
    total_chunks += (segs[i].rows + kRowGrain - 1) / kRowGrain;
    total_rows += segs[i].rows;
  }
  auto run_chunks = [&](std::int64_t c0, std::int64_t c1) {
    for (int i = 0; i < n_segs; ++i) {
      const Segment& s = segs[i];
      const std::int64_t s_end = s.first_chunk + (s.rows + kRowGrain - 1) / kRowGrain;
      const std::int64_t lo = std::max(c0, s.first_chunk), hi = std::min(c1, s_end);
      if (lo >= hi) continue;
      const std::int64_t r0 = (lo - s.first_chunk) * kRowGrain;
      const std::int64_t r1 = std::min(s.rows, (hi - s.first_chunk) * kRowGrain);
      if (n == 1) {
        s.vec(s.w, s.row_bytes, s.cols, s.x, s.y, r0, r1);
      } else {
        s.mul(s.w, s.row_bytes, s.cols, s.x, n, s.y, s.rows, r0, r1);
      }
    }
  };
  if (pool == nullptr || pool->size() == 1 || total_rows < 2 * kRowGrain) {
    run_chunks(0, total_chunks);
    return;
  }
  pool->Run([&](int t, int nt) {
    const auto [c0, c1] = core::ThreadPool::SplitRange(total_chunks, t, nt);
    if (c0 < c1) run_chunks(c0, c1);
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

bool MatMulManyWith(const KernelTable& table, std::span<const MatJob> jobs, std::int64_t n,
                    core::ThreadPool* pool) {
  for (const MatJob& j : jobs) {
    const int kind = KindIndex(j.w->type);
    if (kind < 0 || table.mat_vec[kind] == nullptr || table.mat_mul[kind] == nullptr) {
      return false;
    }
  }
  if (n <= 0) return true;
  for (std::size_t begin = 0; begin < jobs.size(); begin += kMaxSegments) {
    Segment segs[kMaxSegments];
    int n_segs = 0;
    std::int64_t chunk = 0;
    for (std::size_t i = begin; i < std::min(jobs.size(), begin + kMaxSegments); ++i) {
      const WeightView& w = *jobs[i].w;
      const int kind = KindIndex(w.type);
      segs[n_segs++] =
          Segment{table.mat_vec[kind], table.mat_mul[kind], w.data, w.row_bytes(), w.rows, w.cols,
                  jobs[i].x,           jobs[i].y,           chunk};
      chunk += (w.rows + kRowGrain - 1) / kRowGrain;
    }
    RunSegments(segs, n_segs, n, pool);
  }
  return true;
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
  [[maybe_unused]] const bool ok =
      internal::MatVecWith(internal::ActiveKernels(), w.type, w.data, w.rows, w.cols, x, y, pool);
  assert(ok && "MatVec: unsupported weight type");
}

void MatMul(const WeightView& w, const float* x, std::int64_t n, float* y, core::ThreadPool* pool) {
  [[maybe_unused]] const bool ok = internal::MatMulWith(internal::ActiveKernels(), w.type, w.data,
                                                        w.rows, w.cols, x, n, y, pool);
  assert(ok && "MatMul: unsupported weight type");
}

void MatVecMany(std::span<const MatJob> jobs, core::ThreadPool* pool) {
  MatMulMany(jobs, 1, pool);
}

void MatMulMany(std::span<const MatJob> jobs, std::int64_t n, core::ThreadPool* pool) {
  [[maybe_unused]] const bool ok =
      internal::MatMulManyWith(internal::ActiveKernels(), jobs, n, pool);
  assert(ok && "MatMulMany: unsupported weight type");
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
