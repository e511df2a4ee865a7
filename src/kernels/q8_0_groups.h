// Q8_0 weights regrouped at load for the AVX-512 VNNI GEMV (WeightLayout::kQ8_0Groups).
//
// In the file a Q8_0 block is 34 bytes: d (f16), qs (32 int8). The VNNI GEMV on the file's
// layout multiplies u8 by s8 only after giving the weights the activations' signs, and gathers
// each pair of blocks from two 32-byte loads: in cache it read about as fast as one core's share
// of the memory stream (bench_kernels BM_GemvHot, 31-49 Gweights/s on an AMD EPYC Zen 5).
// Regrouped, each whole group of 4 blocks of a row is 136 bytes
//
//   lo[4][16] | hi[4][16] | d[4] (f16)
//
// lo[k] holds elements 0-15 of block k and hi[k] elements 16-31, each plus 128 (as u8: the
// integer dot takes the weights as its unsigned operand directly, its offset of 128 per weight
// entering as the initial value, as Q4_0's 8 does), so a step is two 64-byte loads, two integer
// dots into one set of 4 lanes per block, and one 8-byte load for the scales. A row's last n < 4
// blocks (SmolLM2-135M's 576 columns: 18 blocks, a part group of 2) are regrouped the same way
// into their 34 n bytes (16 n, 16 n, 2 n), read with masked loads. A regrouped row keeps the
// file's size: regrouping works in place on the private copy of the weights
// (core::FilePlacement::kHugePages) and costs no memory. Measured: docs/RESULTS.md (issue 14).
//
// Every kernel reads the layout: the VNNI GEMV and the batched VNNI kernel natively, every other
// Q8_0 kernel through an adaptor that copies its rows back to the file's layout in scratch memory
// first (grouped_rows-inl.h); all with results equal bit for bit to the same kernel on the file's
// layout (the VNNI GEMV on the file's layout sums the same 4 lanes per block for that reason).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernel_table.h"

namespace smartgen::kernels {

inline constexpr std::int64_t kQ8_0GroupBlocks = 4;

// Whether Q8_0 matrices should be regrouped for this process: the active kernels are the
// AVX-512 table on a CPU with VNNI and fast dot products are on (SetFastDot). Ask after SetFastDot.
bool Q8_0GroupsPay();

// Rewrites `rows` Q8_0 rows of `cols` columns (RowBytes(kQ8_0, cols) apart) from the file's
// layout to the grouped one, in place.
void GroupQ8_0Rows(std::byte* rows_data, std::int64_t rows, std::int64_t cols);
// The inverse: grouped rows `src` back to the file's layout in `dst` (not overlapping).
void UngroupQ8_0Rows(const std::byte* src, std::byte* dst, std::int64_t rows, std::int64_t cols);

namespace internal {

// The kernel for grouped Q8_0 rows that computes what `file_layout_kernel` (one of the Q8_0
// kernels of any table) computes for rows in the file's layout. Aborts on a kernel that is not
// one of them (a programming error).
MatVecFn GroupedQ8_0(MatVecFn file_layout_kernel);
MatMulFn GroupedQ8_0(MatMulFn file_layout_kernel);
MatVecActFn GroupedQ8_0(MatVecActFn file_layout_kernel);
MatMulActFn GroupedQ8_0(MatMulActFn file_layout_kernel);

namespace avx512vnni {
// The VNNI Q8_0 GEMV (MatVecQ8_0) on grouped rows (matmul_avx512vnni.cc), and the batched
// kernel (MatMulQ8_0: decode batches) on them (matmul_avx512vnni_batch.cc).
MatVecActSig MatVecQ8_0Groups;
MatMulActSig MatMulQ8_0Groups;
}  // namespace avx512vnni

}  // namespace internal
}  // namespace smartgen::kernels
