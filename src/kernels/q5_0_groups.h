// Q5_0 weights regrouped at load for the AVX-512 VNNI GEMV (WeightLayout::kQ5_0Groups).
//
// In the file a Q5_0 block is 22 bytes: d (f16), qh (32 fifth bits), qs (16 nibble bytes). The
// VNNI kernel takes 4 blocks per step, and gathering their nibbles, fifth bits and scales from
// four 22-byte blocks costs it more shuffles than arithmetic: in cache it read 25-28 GB/s per
// core at 576 and 896 columns, about one core's share of the memory stream. Regrouped, each
// whole group of 4 blocks of a row is 88 bytes
//
//   qs[4][16] | qh low halves [4] (u16) | qh high halves [4] (u16) | d[4] (f16)
//
// so a step is one 64-byte load for the nibbles, two 64-bit mask loads for the fifth bits and
// one 8-byte load for the scales. A row's last n < 4 blocks (SmolLM2-135M's 576 columns: 18
// blocks, a part group of 2) are regrouped the same way into their 22 n bytes (nibbles, qh low
// halves, qh high halves, scales, n of each): in the file's layout the part group cost a 576-column
// row about a quarter of its time in cache. A regrouped matrix has the file's row_bytes, and
// regrouping works in place on the private copy of the weights (core::FilePlacement::kHugePages),
// so it costs no memory. Measured: docs/RESULTS.md (issue 14).
//
// Every kernel reads the layout: the VNNI GEMV and the batched VNNI kernel natively, every other
// Q5_0 kernel (the exact f32 paths, the AVX2 and scalar integer dots: none of them runs on a
// grouped matrix unless SetFastDot or the ISA changes after load) through an adaptor that copies
// its rows back to the file's layout in scratch memory first (GroupedQ5_0 below); all with
// results equal bit for bit to the same kernel on the file's layout.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernel_table.h"

namespace smartgen::kernels {

inline constexpr std::int64_t kQ5_0GroupBlocks = 4;

// Whether Q5_0 matrices should be regrouped for this process: the active kernels are the
// AVX-512 table on a CPU with VNNI and fast dot products are on (SetFastDot), so that decode
// runs the grouped GEMV. Ask after SetFastDot.
bool Q5_0GroupsPay();

// Rewrites `rows` Q5_0 rows of `cols` columns (RowBytes(kQ5_0, cols) apart) from the file's
// layout to the grouped one, in place.
void GroupQ5_0Rows(std::byte* rows_data, std::int64_t rows, std::int64_t cols);
// The inverse: grouped rows `src` back to the file's layout in `dst` (not overlapping).
void UngroupQ5_0Rows(const std::byte* src, std::byte* dst, std::int64_t rows, std::int64_t cols);

namespace internal {

// The kernel for grouped Q5_0 rows that computes what `file_layout_kernel` (one of the Q5_0
// kernels of any table) computes for rows in the file's layout. Aborts on a kernel that is not
// one of them (a programming error).
MatVecFn GroupedQ5_0(MatVecFn file_layout_kernel);
MatMulFn GroupedQ5_0(MatMulFn file_layout_kernel);
MatVecActFn GroupedQ5_0(MatVecActFn file_layout_kernel);
MatMulActFn GroupedQ5_0(MatMulActFn file_layout_kernel);

namespace avx512vnni {
// The VNNI Q5_0 GEMV (MatVecQ5_0) on grouped rows (matmul_avx512vnni.cc), and the batched
// kernel (MatMulQ5_0: decode batches, prefill chunks) on them (matmul_avx512vnni_batch.cc).
MatVecActSig MatVecQ5_0Groups;
MatMulActSig MatMulQ5_0Groups;
}  // namespace avx512vnni

}  // namespace internal
}  // namespace smartgen::kernels
