#include "kernels/q5_0_groups.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/cpu_features.h"
#include "gguf/ggml_type.h"
#include "kernels/matmul.h"

namespace smartgen::kernels {
namespace {

constexpr std::size_t kQ5Block = 22;  // sizeof(BlockQ5_0): d, qh[4], qs[16]
constexpr std::size_t kGroupBytes = kQ5Block * kQ5_0GroupBlocks;

std::size_t RowBytesQ5_0(std::int64_t cols) { return gguf::RowBytes(gguf::GgmlType::kQ5_0, cols); }

// n (1-4) blocks from the file's layout to the grouped one: nibbles, qh low halves, qh high
// halves, scales, each n entries long (n = 4: a whole group, kQhLow, kQhHigh and kScales apart).
void GroupBlocks(const std::byte* file, std::size_t n, std::byte* grouped) {
  for (std::size_t k = 0; k < n; ++k) {
    const std::byte* b = file + k * kQ5Block;
    std::memcpy(grouped + 16 * k, b + 6, 16);
    std::memcpy(grouped + 16 * n + 2 * k, b + 2, 2);  // qh is little-endian: bits 0-15 first
    std::memcpy(grouped + 18 * n + 2 * k, b + 4, 2);
    std::memcpy(grouped + 20 * n + 2 * k, b, 2);
  }
}

void UngroupBlocks(const std::byte* grouped, std::size_t n, std::byte* file) {
  for (std::size_t k = 0; k < n; ++k) {
    std::byte* b = file + k * kQ5Block;
    std::memcpy(b, grouped + 20 * n + 2 * k, 2);
    std::memcpy(b + 2, grouped + 16 * n + 2 * k, 2);
    std::memcpy(b + 4, grouped + 18 * n + 2 * k, 2);
    std::memcpy(b + 6, grouped + 16 * k, 16);
  }
}

}  // namespace

bool Q5_0GroupsPay() {
#if defined(SMARTGEN_KERNELS_X86)
  return internal::ActiveKernels().isa == internal::Isa::kAvx512 &&
         core::GetCpuFeatures().avx512vnni && FastDotActive(gguf::GgmlType::kQ5_0);
#else
  return false;
#endif
}

void GroupQ5_0Rows(std::byte* rows_data, std::int64_t rows, std::int64_t cols) {
  const std::size_t rb = RowBytesQ5_0(cols);
  const auto blocks = static_cast<std::size_t>(cols / 32);
  std::byte tmp[kGroupBytes];
  for (std::int64_t r = 0; r < rows; ++r) {
    std::byte* row = rows_data + static_cast<std::size_t>(r) * rb;
    for (std::size_t b = 0; b < blocks; b += kQ5_0GroupBlocks) {
      const std::size_t n = std::min<std::size_t>(kQ5_0GroupBlocks, blocks - b);
      std::memcpy(tmp, row + b * kQ5Block, n * kQ5Block);
      GroupBlocks(tmp, n, row + b * kQ5Block);
    }
  }
}

void UngroupQ5_0Rows(const std::byte* src, std::byte* dst, std::int64_t rows, std::int64_t cols) {
  const std::size_t rb = RowBytesQ5_0(cols);
  const auto blocks = static_cast<std::size_t>(cols / 32);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::byte* in = src + static_cast<std::size_t>(r) * rb;
    std::byte* out = dst + static_cast<std::size_t>(r) * rb;
    for (std::size_t b = 0; b < blocks; b += kQ5_0GroupBlocks) {
      const std::size_t n = std::min<std::size_t>(kQ5_0GroupBlocks, blocks - b);
      UngroupBlocks(in + b * kQ5Block, n, out + b * kQ5Block);
    }
  }
}

namespace internal {
namespace {

// Rows [r0, r1) of grouped w, in the file's layout, in this thread's scratch memory.
const std::byte* FileLayoutRows(const void* w, std::size_t row_bytes, std::int64_t cols,
                                std::int64_t r0, std::int64_t r1) {
  const std::size_t bytes = static_cast<std::size_t>(r1 - r0) * row_bytes;
  auto* out = reinterpret_cast<std::byte*>(ThreadScratch(6, (bytes + sizeof(float) - 1) / sizeof(float)));
  UngroupQ5_0Rows(static_cast<const std::byte*>(w) + static_cast<std::size_t>(r0) * row_bytes, out,
                  r1 - r0, cols);
  return out;
}

// Each adaptor runs its kernel on rows [0, r1 - r0) of the scratch copy, output shifted by r0.
template <MatVecFn F>
void GroupedVec(const void* w, std::size_t rb, std::int64_t cols, const float* x, float* y,
                std::int64_t r0, std::int64_t r1) {
  F(FileLayoutRows(w, rb, cols, r0, r1), rb, cols, x, y + r0, 0, r1 - r0);
}

template <MatMulFn F>
void GroupedMul(const void* w, std::size_t rb, std::int64_t cols, const float* x, std::int64_t n,
                float* y, std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  F(FileLayoutRows(w, rb, cols, r0, r1), rb, cols, x, n, y + r0, ldy, 0, r1 - r0);
}

template <MatVecActFn F>
void GroupedVecAct(const void* w, std::size_t rb, std::int64_t cols, const ActQ8& x, float* y,
                   std::int64_t r0, std::int64_t r1) {
  F(FileLayoutRows(w, rb, cols, r0, r1), rb, cols, x, y + r0, 0, r1 - r0);
}

template <typename Fn, std::size_t N>
Fn Find(Fn f, const std::pair<Fn, Fn> (&pairs)[N]) {
  for (const auto& [file_layout, grouped] : pairs) {
    if (f == file_layout) return grouped;
  }
  std::fprintf(stderr, "smartgen: no grouped Q5_0 kernel for this kernel (a bug)\n");
  std::abort();
}

}  // namespace

MatVecFn GroupedQ5_0(MatVecFn f) {
  static const std::pair<MatVecFn, MatVecFn> kPairs[] = {
      {scalar::MatVecQ5_0, GroupedVec<scalar::MatVecQ5_0>},
#if defined(SMARTGEN_KERNELS_X86)
      {avx2::MatVecQ5_0, GroupedVec<avx2::MatVecQ5_0>},
      {avx512::MatVecQ5_0, GroupedVec<avx512::MatVecQ5_0>},
#endif
  };
  return Find(f, kPairs);
}

MatMulFn GroupedQ5_0(MatMulFn f) {
  static const std::pair<MatMulFn, MatMulFn> kPairs[] = {
      {scalar::MatMulQ5_0, GroupedMul<scalar::MatMulQ5_0>},
#if defined(SMARTGEN_KERNELS_X86)
      {avx2::MatMulQ5_0, GroupedMul<avx2::MatMulQ5_0>},
      {avx512::MatMulQ5_0, GroupedMul<avx512::MatMulQ5_0>},
#endif
  };
  return Find(f, kPairs);
}

MatVecActFn GroupedQ5_0(MatVecActFn f) {
  static const std::pair<MatVecActFn, MatVecActFn> kPairs[] = {
      {scalar::MatVecQ5_0Act, GroupedVecAct<scalar::MatVecQ5_0Act>},
#if defined(SMARTGEN_KERNELS_X86)
      {avx2::MatVecQ5_0Act, GroupedVecAct<avx2::MatVecQ5_0Act>},
      {avx512vnni::MatVecQ5_0, avx512vnni::MatVecQ5_0Groups},
#endif
  };
  return Find(f, kPairs);
}

MatMulActFn GroupedQ5_0(MatMulActFn f) {
#if defined(SMARTGEN_KERNELS_X86)
  static const std::pair<MatMulActFn, MatMulActFn> kPairs[] = {
      {avx512vnni::MatMulQ5_0, avx512vnni::MatMulQ5_0Groups},
  };
  return Find(f, kPairs);
#else
  (void)f;
  std::fprintf(stderr, "smartgen: no grouped Q5_0 kernel for this kernel (a bug)\n");
  std::abort();
#endif
}

}  // namespace internal
}  // namespace smartgen::kernels
