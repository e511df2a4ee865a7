// Internal to the kernels layer (and its tests): the per-ISA function tables behind the public
// kernels, so the dispatcher picks one table at run time and tests can run every table the CPU
// supports against the scalar one.
//
// The ISA translation units (*_avx2.cc, *_avx512.cc) are compiled with their own -m flags. They
// must not emit out-of-line copies of inline functions that scalar code also uses (the linker
// keeps one copy, possibly the AVX-512 one), so the table entries take plain data only (pointers,
// sizes, aggregate structs) and ISA files use no std containers or header inline functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include <span>

#include "kernels/attention.h"
#include "kernels/rope.h"

namespace smartgen::core {
class ThreadPool;
}
namespace smartgen::gguf {
enum class GgmlType : std::uint32_t;
}

namespace smartgen::kernels {
struct MatJob;
struct NextPass;
struct WeightView;
}  // namespace smartgen::kernels

namespace smartgen::kernels::internal {

enum class Isa : int { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };
inline constexpr int kNumIsas = 3;
const char* IsaName(Isa isa);

// Weight storage types the matrix kernels handle, as table indices.
enum class WeightKind : int {
  kF32, kF16, kBF16, kQ8_0, kQ4_0, kQ4_K, kQ6_K,
  kQ4_1, kQ5_0, kQ5_1, kQ2_K, kQ3_K, kQ5_K, kIQ4_NL, kIQ4_XS,
};
inline constexpr int kNumWeightKinds = 15;

// y[r] = W[r] . x for r in [r0, r1). Rows of `cols` elements, `row_bytes` apart.
using MatVecSig = void(const void* w, std::size_t row_bytes, std::int64_t cols, const float* x,
                       float* y, std::int64_t r0, std::int64_t r1);
using MatVecFn = MatVecSig*;
// Y[t][r] = W[r] . X[t] for t < n and r in [r0, r1); X is [n][cols], Y has row stride ldy.
using MatMulSig = void(const void* w, std::size_t row_bytes, std::int64_t cols, const float* x,
                       std::int64_t n, float* y, std::int64_t ldy, std::int64_t r0,
                       std::int64_t r1);
using MatMulFn = MatMulSig*;
using AttendBlocksSig = void(const AttentionParams& p, const float* q, std::int64_t q_pos,
                             const KvBlockRef* blocks, std::size_t n_blocks, float* out,
                             float* lse);
using AttendBlocksFn = AttendBlocksSig*;
using AttendCausalSig = void(const AttentionParams& p, const float* q, std::int64_t q_stride,
                             std::int64_t n_tokens, std::int64_t first_pos,
                             const KvBlockRef* blocks, std::size_t n_blocks, float* out,
                             std::int64_t out_stride, float* lse);
using AttendCausalFn = AttendCausalSig*;
using RmsNormSig = void(const float* x, const float* weight, std::int64_t n, float eps, float* out);
using RmsNormFn = RmsNormSig*;
using SwiGluSig = void(const float* gate, const float* up, std::int64_t n, float* out);
using SwiGluFn = SwiGluSig*;
using SoftmaxSig = float(float* x, std::int64_t n);
using SoftmaxFn = SoftmaxSig*;
using AddInPlaceSig = void(float* y, const float* x, std::int64_t n);
using AddInPlaceFn = AddInPlaceSig*;
// y[i] = f16(x[i]), rounded as fp16.h's F32ToF16 (NaN: its quiet NaN), i < n.
using F32ToF16RowSig = void(const float* x, std::uint16_t* y, std::int64_t n);
using F32ToF16RowFn = F32ToF16RowSig*;
// Rotates x[n_heads][head_dim] with per-pair cos/sin tables of n_rot / 2 entries.
using RopeApplySig = void(const RopeConfig& c, const float* cos_t, const float* sin_t, float* x,
                          int n_heads);
using RopeApplyFn = RopeApplySig*;

struct KernelTable {
  Isa isa = Isa::kScalar;
  MatVecFn mat_vec[kNumWeightKinds] = {};
  MatMulFn mat_mul[kNumWeightKinds] = {};
  AttendBlocksFn attend_blocks = nullptr;
  AttendCausalFn attend_causal = nullptr;
  RmsNormFn rms_norm = nullptr;
  SwiGluFn swiglu = nullptr;
  SwiGluFn geglu = nullptr;  // same signature: gelu(gate) * up
  SoftmaxFn softmax = nullptr;
  AddInPlaceFn add_in_place = nullptr;
  RopeApplyFn rope_apply = nullptr;
  F32ToF16RowFn f32_to_f16 = nullptr;
};

// The table for `isa`, or nullptr when this build lacks it or this CPU (after the SMARTGEN_ISA
// cap) cannot run it. The scalar table always exists.
const KernelTable* GetKernelTable(Isa isa);
// The best table for this CPU; what the public kernels use.
const KernelTable& ActiveKernels();

// The kernels of each ISA, one namespace each, all with the same names; kernel_table.cc
// assembles them into tables. scalar:: is defined in the concept files (matmul.cc, ...),
// avx2:: in *_avx2.cc and avx512:: in *_avx512.cc (built when SMARTGEN_KERNELS_X86 is set).
#define SMARTGEN_KERNELS_DECLARE_ISA(ns)                                                      \
  namespace ns {                                                                              \
  MatVecSig MatVecF32, MatVecF16, MatVecBF16, MatVecQ8_0, MatVecQ4_0, MatVecQ4_K, MatVecQ6_K; \
  MatMulSig MatMulF32, MatMulF16, MatMulBF16, MatMulQ8_0, MatMulQ4_0, MatMulQ4_K, MatMulQ6_K; \
  MatVecSig MatVecQ4_1, MatVecQ5_0, MatVecQ5_1, MatVecQ2_K, MatVecQ3_K, MatVecQ5_K;           \
  MatVecSig MatVecIQ4_NL, MatVecIQ4_XS;                                                       \
  MatMulSig MatMulQ4_1, MatMulQ5_0, MatMulQ5_1, MatMulQ2_K, MatMulQ3_K, MatMulQ5_K;           \
  MatMulSig MatMulIQ4_NL, MatMulIQ4_XS;                                                       \
  AttendBlocksSig AttendBlocks;                                                               \
  AttendCausalSig AttendCausal;                                                               \
  RmsNormSig RmsNorm;                                                                         \
  SwiGluSig SwiGlu, GeGlu;                                                                    \
  SoftmaxSig Softmax;                                                                         \
  AddInPlaceSig AddInPlace;                                                                   \
  F32ToF16RowSig F32ToF16Row;                                                                 \
  RopeApplySig RopeApply;                                                                     \
  }
SMARTGEN_KERNELS_DECLARE_ISA(scalar)
SMARTGEN_KERNELS_DECLARE_ISA(avx2)
SMARTGEN_KERNELS_DECLARE_ISA(avx512)

// Per-thread scratch memory for ISA kernels: at least n_floats floats, 64-byte aligned, valid
// until the next call with the same slot on this thread. Lives in a scalar translation unit.
// Slots: 0 a scalar kernel's dequantized row, 1 GEMM packed panels, 2-3 matmul.cc's chunk
// products before their epilogue (accumulate, SwiGLU), 4 the fast-dot kernels' rounded
// activations, 5 the activations prepared for a pass (matmul.cc, on the calling thread), 6 grouped
// Q5_0 / Q8_0 rows copied back to the file's layout (grouped_rows-inl.h), 7 the decode
// attention's scores and tiles (attention_decode_simd-inl.h).
float* ThreadScratch(int slot, std::size_t n_floats);

// Activations for integer dot products, quantized like ggml's quantize_row_q8_0: per 32 values
// d = max|x| / 127 and q = x * (1 / d) rounded to nearest, ties to even (ggml: away from zero),
// which SIMD conversion does exactly the same. n % 32 == 0; q[n], d[n / 32]. Scalar
// (fast_dot.cc); the VNNI kernel has its own vector copy, bit for bit the same.
void QuantizeActivationsQ8(const float* x, std::int64_t n, std::int8_t* q, float* d);

// One token's activations prepared for the integer-dot kernels, once per parallel pass (not
// once per chunk): quantized to Q8_0 blocks as QuantizeActivationsQ8 does, plus what the
// kernels' u8 x s8 products (vpdpbusd) want. n % 32 == 0; every array is owned by the caller.
struct ActQ8 {
  const std::int8_t* q = nullptr;      // [n] quantized activations
  const std::uint8_t* qabs = nullptr;  // [n] |q| (Q8_0 weights take the signs)
  const std::uint32_t* qneg = nullptr;  // [n / 32] sign bits of q, one word per block
  const float* d = nullptr;            // [n / 32] block scales
  const float* sum8 = nullptr;         // [n / 32] 8 * d * sum(q) (Q4_K's mins use sum8 / 8)
};
// Fills the arrays of an ActQ8 from x[n]; bit for bit the same in every implementation.
using PrepareActSig = void(const float* x, std::int64_t n, std::int8_t* q, std::uint8_t* qabs,
                           std::uint32_t* qneg, float* d, float* sum8);
using PrepareActFn = PrepareActSig*;
// y[r] = W[r] . x for r in [r0, r1), x prepared (MatVecSig otherwise).
using MatVecActSig = void(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x,
                          float* y, std::int64_t r0, std::int64_t r1);
using MatVecActFn = MatVecActSig*;

// How far ahead a GEMV that reads its rows as one sequential stream per thread prefetches its
// weights (AVX512-BF16's, and the F16 and integer-dot ones in chunks too small for two streams:
// row_streams.h), in bytes of that stream, whatever the row length. On an AMD EPYC Zen 5
// (weights then mapped from the page cache) 8 KiB decoded 1-6 % faster than 2 KiB and the 12
// rows (4-60 KiB) the quantized kernels prefetched then, 4 or 16 KiB no better (docs/RESULTS.md,
// issue 14). F32 prefetches kPlainGemvPrefetchBytes.
inline constexpr std::size_t kGemvPrefetchBytes = 8192;
// The F32 GEMV (and BF16 without AVX-512 BF16: DotRowSeq) prefetches only this far ahead. With
// the weights on huge pages the hardware prefetcher streams them, and a software prefetch 8 KiB
// ahead costs it: on an AMD EPYC Zen 5, tg128 with 256 B against 8 KiB was 1.10-1.23x (F32),
// SmolLM2-135M F32 1.0-1.14x; 128 B the same as 256, 512 B 0.86x of it (docs/RESULTS.md, issue
// 14).
inline constexpr std::size_t kPlainGemvPrefetchBytes = 256;

// The activations of up to kPanelTokens tokens of a decode batch for the batched integer-dot
// kernels, interleaved so that one 64-byte vector holds 4 values of each of 16 tokens: for
// 32-value block b and group k < 8 of 4 values, q[(b * 8 + k) * 64 + 4 * t + i] is token t's
// value 32 b + 4 k + i (as ActQ8::q). Built from the tokens' ActQ8s (BuildActPanel, matmul.cc);
// lanes of tokens >= n are zero. Every array is owned by the caller.
inline constexpr int kPanelTokens = 16;
struct ActPanel {
  const std::int8_t* q = nullptr;       // [nb][8][16][4]
  const std::int32_t* nsum = nullptr;   // [nb][16] -sum(q) of each token's block
  const std::int32_t* nsum16 = nullptr;  // [nb][2][16] -sum(q) of each half-block (Q6_K)
  const float* d = nullptr;             // [nb][16] each token's block scale d_x
  const float* xsum = nullptr;          // [nb][16] sum8 / 8 = d_x * sum(q) (Q4_K's mins)
  int n = 0;                            // tokens in the panel, 1..16
};
// Y[t][r] = W[r] . x_t for the panel's tokens t < x.n and r in [r0, r1); Y row stride ldy.
using MatMulActSig = void(const void* w, std::size_t row_bytes, std::int64_t cols,
                          const ActPanel& x, float* y, std::int64_t ldy, std::int64_t r0,
                          std::int64_t r1);
using MatMulActFn = MatMulActSig*;

// kernels::SetFastDot: Q8_0, Q4_0, Q5_0, Q4_K, Q6_K, Q4_1, Q5_1, Q2_K, Q3_K, Q5_K, IQ4_NL and
// IQ4_XS weights x Q8_0-quantized activations, and BF16 weights x bf16-rounded activations - the
// scalar twins (fast_dot*.cc), the AVX-512 VNNI / AVX512-BF16 kernels (matmul_avx512vnni*.cc,
// matmul_avx512bf16.cc, run only when the CPU has those extensions) and, without VNNI, the AVX2
// integer dots of every quantized type (matmul_avx2_intdot*.cc; batched: Q4_0, Q5_0, Q4_1, Q5_1,
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K).
namespace scalar {
MatVecSig MatVecBF16Bf16;
MatMulSig MatMulBF16Bf16;  // token by token MatVecBF16Bf16 from 32 tokens, as avx512bf16's
MatVecActSig MatVecQ8_0Act, MatVecQ4_0Act, MatVecQ5_0Act, MatVecQ4_KAct, MatVecQ6_KAct;
MatVecActSig MatVecQ4_1Act, MatVecQ5_1Act, MatVecQ2_KAct, MatVecQ3_KAct, MatVecQ5_KAct;
MatVecActSig MatVecIq4NlAct, MatVecIq4XsAct;
PrepareActSig PrepareActQ8;
}  // namespace scalar
namespace avx512vnni {
MatVecActSig MatVecQ8_0, MatVecQ4_0, MatVecQ5_0, MatVecQ4_K, MatVecQ6_K;
MatVecActSig MatVecQ4_1, MatVecQ5_1, MatVecQ2_K, MatVecQ3_K, MatVecQ5_K, MatVecIq4Nl, MatVecIq4Xs;
PrepareActSig PrepareActQ8;
// The same products for the tokens of a panel at once (matmul_avx512vnni_batch.cc): each weight
// row is unpacked once per panel and broadcast against the 16 tokens' lanes, so a block's dot
// costs 8 vpdpbusd for all of them. Equal to the MatVec kernels token by token, up to the
// order of the f32 sums.
MatMulActSig MatMulQ8_0, MatMulQ4_0, MatMulQ5_0, MatMulQ4_K, MatMulQ6_K;
MatMulActSig MatMulQ4_1, MatMulQ5_1, MatMulQ2_K, MatMulQ3_K, MatMulQ5_K, MatMulIq4Nl, MatMulIq4Xs;
}  // namespace avx512vnni
namespace avx2 {  // matmul_avx2_intdot*.cc: the same integer dots with AVX2 (vpmaddubsw)
PrepareActSig PrepareActQ8;  // bit for bit scalar::PrepareActQ8
// matmul_avx2_batch.cc: 8-token panels
MatMulActSig MatMulQ4_0, MatMulQ5_0, MatMulQ4_K, MatMulQ5_K, MatMulQ6_K;
MatMulActSig MatMulQ4_1, MatMulQ5_1, MatMulQ2_K, MatMulQ3_K;
MatVecActSig MatVecQ8_0Act, MatVecQ4_0Act, MatVecQ5_0Act, MatVecQ4_KAct, MatVecQ5_KAct,
    MatVecQ6_KAct;
MatVecActSig MatVecQ4_1Act, MatVecQ5_1Act, MatVecIq4NlAct, MatVecIq4XsAct, MatVecQ2_KAct,
    MatVecQ3_KAct;
}  // namespace avx2
namespace avx512bf16 {
MatVecSig MatVecBF16;
// From 32 tokens (a prefill, a large decode batch) a packed GEMM; fewer take avx512::MatMulBF16,
// the exact f32 kernels, whose small-batch path reads each weight row once for all tokens.
MatMulSig MatMulBF16;
}
// The fast-dot MatVec kernel `table` uses for `type` now, or nullptr for the regular one.
MatVecFn FastDotKernel(const KernelTable& table, gguf::GgmlType type);
// The fast-dot MatMul kernel (tokens x BF16 weights) `table` uses for `type` now, or nullptr.
// The BF16 kernels need cols % 32 == 0 (MakeSegment checks).
MatMulFn FastDotMulKernel(const KernelTable& table, gguf::GgmlType type);
// The fast-dot kernel on prepared activations `table` uses for `type` now (and, in *prepare,
// the function that prepares them), or nullptr.
MatVecActFn FastDotActKernel(const KernelTable& table, gguf::GgmlType type, PrepareActFn* prepare);
// The batched fast-dot kernel `table` uses for `type` now (decode batches of 2..kActTokens
// tokens, in panels), or nullptr (then the batch goes token by token).
MatMulActFn FastDotBatchKernel(const KernelTable& table, gguf::GgmlType type);
// Fills a panel of n <= kPanelTokens tokens from their prepared activations acts[0..n), cols
// values each, into `storage` (PanelFloats(cols) floats, 64-byte aligned).
std::size_t PanelFloats(std::int64_t cols);
ActPanel BuildActPanel(const ActQ8* acts, int n, std::int64_t cols, float* storage);

// The public matrix kernels with an explicit table (tests run every available table).
// Returns false for a weight type the table has no kernel for.
bool MatVecWith(const KernelTable& table, gguf::GgmlType type, const void* w, std::int64_t rows,
                std::int64_t cols, const float* x, float* y, core::ThreadPool* pool);
bool MatMulWith(const KernelTable& table, gguf::GgmlType type, const void* w, std::int64_t rows,
                std::int64_t cols, const float* x, std::int64_t n, float* y,
                core::ThreadPool* pool);
bool MatMulManyWith(const KernelTable& table, std::span<const MatJob> jobs, std::int64_t n,
                    core::ThreadPool* pool, const NextPass* next = nullptr);
bool MatMulSwiGluWith(const KernelTable& table, const WeightView& gate, const WeightView& up,
                      const float* x, std::int64_t n, float* out, core::ThreadPool* pool,
                      const NextPass* next = nullptr);
bool MatMulGeGluWith(const KernelTable& table, const WeightView& gate, const WeightView& up,
                     const float* x, std::int64_t n, float* out, core::ThreadPool* pool,
                     const NextPass* next = nullptr);

}  // namespace smartgen::kernels::internal
