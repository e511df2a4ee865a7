// Regrouped rows (q5_0_groups.h, q8_0_groups.h): the walk over a matrix's groups of blocks, and
// running a kernel written for the file's layout on regrouped rows: each adaptor copies the rows it
// is given back to the file's layout in this thread's scratch memory (ThreadScratch slot 6) and
// runs the kernel on the copy, so every kernel gives on regrouped rows bit for bit what it gives on
// the file's rows. Only the VNNI kernels read a regrouped layout natively; the others run on one
// only when SetFastDot or the ISA changes after a model was loaded.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "kernels/kernel_table.h"

namespace smartgen::kernels::internal::grouped {

// Undoes a regrouping: `rows` rows of `cols` columns from `src` to `dst` (not overlapping).
using UngroupFn = void (*)(const std::byte* src, std::byte* dst, std::int64_t rows,
                           std::int64_t cols);

// Rewrites `rows` rows of `cols` columns (kBlockBytes per block of 32 columns) group by group:
// `blocks(from, n, to)` for each row's groups of 4 blocks, the last one n < 4 blocks when the row
// has a part group. In place when src == dst (each group is copied aside first).
using BlocksFn = void (*)(const std::byte* from, std::size_t n, std::byte* to);
template <std::size_t kBlockBytes>
void RegroupRows(BlocksFn blocks_fn, const std::byte* src, std::byte* dst, std::int64_t rows,
                 std::int64_t cols) {
  constexpr std::size_t kGroup = 4;
  const auto blocks = static_cast<std::size_t>(cols / 32);
  const std::size_t row_bytes = blocks * kBlockBytes;
  std::byte tmp[kGroup * kBlockBytes];
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::size_t b = 0; b < blocks; b += kGroup) {
      const std::size_t n = std::min(kGroup, blocks - b);
      const std::size_t at = static_cast<std::size_t>(r) * row_bytes + b * kBlockBytes;
      std::memcpy(tmp, src + at, n * kBlockBytes);
      blocks_fn(tmp, n, dst + at);
    }
  }
}

// Rows [r0, r1) of regrouped w, in the file's layout, in this thread's scratch memory.
template <UngroupFn U>
const std::byte* FileLayoutRows(const void* w, std::size_t row_bytes, std::int64_t cols,
                                std::int64_t r0, std::int64_t r1) {
  const std::size_t bytes = static_cast<std::size_t>(r1 - r0) * row_bytes;
  auto* out =
      reinterpret_cast<std::byte*>(ThreadScratch(6, (bytes + sizeof(float) - 1) / sizeof(float)));
  U(static_cast<const std::byte*>(w) + static_cast<std::size_t>(r0) * row_bytes, out, r1 - r0,
    cols);
  return out;
}

// Each adaptor runs its kernel on rows [0, r1 - r0) of the scratch copy, output shifted by r0.
template <UngroupFn U, MatVecFn F>
void Vec(const void* w, std::size_t rb, std::int64_t cols, const float* x, float* y,
         std::int64_t r0, std::int64_t r1) {
  F(FileLayoutRows<U>(w, rb, cols, r0, r1), rb, cols, x, y + r0, 0, r1 - r0);
}

template <UngroupFn U, MatMulFn F>
void Mul(const void* w, std::size_t rb, std::int64_t cols, const float* x, std::int64_t n, float* y,
         std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  F(FileLayoutRows<U>(w, rb, cols, r0, r1), rb, cols, x, n, y + r0, ldy, 0, r1 - r0);
}

template <UngroupFn U, MatVecActFn F>
void VecAct(const void* w, std::size_t rb, std::int64_t cols, const ActQ8& x, float* y,
            std::int64_t r0, std::int64_t r1) {
  F(FileLayoutRows<U>(w, rb, cols, r0, r1), rb, cols, x, y + r0, 0, r1 - r0);
}

template <UngroupFn U, MatMulActFn F>
void MulAct(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
            std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  F(FileLayoutRows<U>(w, rb, cols, r0, r1), rb, cols, x, y + r0, ldy, 0, r1 - r0);
}

// The regrouped-layout kernel paired with file-layout kernel f; aborts on a kernel with no pair
// (a programming error: every kernel a table can choose for the type is listed).
template <typename Fn, std::size_t N>
Fn Find(Fn f, const std::pair<Fn, Fn> (&pairs)[N], const char* type_name) {
  for (const auto& [file_layout, regrouped] : pairs) {
    if (f == file_layout) return regrouped;
  }
  std::fprintf(stderr, "smartgen: no regrouped %s kernel for this kernel (a bug)\n", type_name);
  std::abort();
}

}  // namespace smartgen::kernels::internal::grouped
