// Matrix products with weights in any supported storage type.
//
// A weight matrix W has `rows` output rows of `cols` inputs each (GGUF ne = [cols, rows]),
// row-major, each row RowBytes(type, cols) bytes; the view borrows (usually the GGUF mapping).
//
//   MatVec: y[rows]      = W x           (decode: one token)
//   MatMul: Y[n][rows]   = X[n][cols] W^T (prefill: n tokens; X and Y row-major)
//
// Results are f32, accumulated in f32. Work is split across `pool` (nullptr = this thread).
// The SIMD path is picked at run time (core::GetCpuFeatures()); every path is checked against
// the scalar reference (*Reference functions) in tests. Requires cols % block_size(type) == 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "gguf/ggml_type.h"

namespace smartgen::kernels {

// How a matrix's rows hold their blocks: as the GGUF file stores them, or (Q5_0 and Q8_0)
// regrouped at load for the AVX-512 VNNI GEMV (q5_0_groups.h, q8_0_groups.h). Same bytes per
// row either way.
enum class WeightLayout : std::uint8_t { kFile, kQ5_0Groups, kQ8_0Groups };

struct WeightView {
  gguf::GgmlType type = gguf::GgmlType::kF32;
  const void* data = nullptr;
  std::int64_t rows = 0;  // output features
  std::int64_t cols = 0;  // input features
  WeightLayout layout = WeightLayout::kFile;
  std::size_t row_bytes() const { return gguf::RowBytes(type, cols); }
  const std::byte* row(std::int64_t r) const {
    return static_cast<const std::byte*>(data) + static_cast<std::size_t>(r) * row_bytes();
  }
};

// The weights the caller's next pass will read: a decode step is a chain of single-token
// passes, and a thread that finishes its chunks of one pass early prefetches its lane of the
// next while the others finish (core::IdlePrefetch). `w`: the next pass's matrices in the order
// of its jobs; `up`, for a gated FFN pass (MatMulSwiGlu / MatMulGeGlu), its up projection (w[0]
// is the gate). Only a hint: any value, or none, gives the same results.
struct NextPass {
  const WeightView* w[3] = {nullptr, nullptr, nullptr};
  const WeightView* up = nullptr;
};

void MatVec(const WeightView& w, const float* x, float* y, core::ThreadPool* pool);

// Decode (MatVec; and with AVX-512 VNNI, decode batches and prefill chunks of up to 512 tokens
// through the batched kernels) with the CPU's low-precision dot products where it has them: Q8_0, Q4_0, Q5_0,
// Q4_K and Q6_K weights with int8 dots (AVX-512 VNNI vpdpbusd; the activations are quantized to
// Q8_0 per 32 values once per pass, as llama.cpp does for Q8_0/Q4_0 - it uses one scale per 256
// for K-quants, we keep the finer 32) and BF16 weights with bf16 x bf16 dots (AVX512-BF16
// vdpbf16ps; the activations are rounded to bf16). Results differ from the exact f32 path by
// that rounding (about 1e-3 of a dot's scale); the default path stays exact to the
// dequantized weights. Off by default; process-wide; the scalar table runs the scalar twins,
// machines without the extension the f32 path.
void SetFastDot(bool on);
// Whether MatVec of `type` weights uses such dot products now.
bool FastDotActive(gguf::GgmlType type);
void MatMul(const WeightView& w, const float* x, std::int64_t n, float* y, core::ThreadPool* pool,
            const NextPass& next = {});

// Several independent products in one parallel pass, e.g. q/k/v or gate/up, which share an
// input: the rows of all jobs are split across `pool` together, so the step pays one thread-pool
// round trip instead of one per matrix. Each result equals MatVec / MatMul of that job alone
// (or, with `accumulate`, is added to y: the residual add fused into the o / down projection).
// x is [n][w->cols] and y is [n][w->rows]; outputs must not overlap inputs or each other.
struct MatJob {
  const WeightView* w = nullptr;
  const float* x = nullptr;
  float* y = nullptr;
  bool accumulate = false;  // y += W x instead of y = W x
};
void MatVecMany(std::span<const MatJob> jobs, core::ThreadPool* pool);
void MatMulMany(std::span<const MatJob> jobs, std::int64_t n, core::ThreadPool* pool,
                const NextPass& next = {});

// The gated FFN input in one pass: out[t][r] = silu(gate[r] . x[t]) * (up[r] . x[t]), i.e.
// SwiGlu(MatMul(gate), MatMul(up)) without writing either product to memory. gate and up have
// the same shape (their types may differ); x is [n][cols], out [n][rows], not overlapping x.
void MatMulSwiGlu(const WeightView& gate, const WeightView& up, const float* x, std::int64_t n,
                  float* out, core::ThreadPool* pool, const NextPass& next = {});
// The same with GeGLU: out = GeGlu(MatMul(gate), MatMul(up)) (elementwise.h), for Gemma.
void MatMulGeGlu(const WeightView& gate, const WeightView& up, const float* x, std::int64_t n,
                 float* out, core::ThreadPool* pool, const NextPass& next = {});

// Scalar references: dequantize each row exactly, then dot in f32 (sequential order).
void MatVecReference(const WeightView& w, const float* x, float* y);
void MatMulReference(const WeightView& w, const float* x, std::int64_t n, float* y);
// Row r of w as f32, whatever its layout (a regrouped row is copied back to the file's layout in
// *file_row first): what the embedding lookup reads.
void DequantizeViewRow(const WeightView& w, std::int64_t r, float* out,
                       std::vector<std::byte>* file_row);

}  // namespace smartgen::kernels
