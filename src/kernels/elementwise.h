// Per-token element-wise kernels of the Llama-family forward pass. All f32, in place where
// noted; each has a scalar reference (*Reference) that tests compare the SIMD path with.
#pragma once

#include <cstdint>

namespace smartgen::kernels {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i], i < n. `out` may alias `x`.
// The mean of squares is accumulated in double like ggml's (ggml_float) sum.
void RmsNorm(const float* x, const float* weight, std::int64_t n, float eps, float* out);
void RmsNormReference(const float* x, const float* weight, std::int64_t n, float eps, float* out);

// out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)). `out` may alias either input.
void SwiGlu(const float* gate, const float* up, std::int64_t n, float* out);
void SwiGluReference(const float* gate, const float* up, std::int64_t n, float* out);

// out[i] = gelu(gate[i]) * up[i] with the tanh approximation of GELU (ggml_gelu's formula,
// computed in f32; ggml's CPU path rounds through an f16 table instead; the SIMD paths use
// the identical x * sigmoid(2u) form). `out` may alias either input.
void GeGlu(const float* gate, const float* up, std::int64_t n, float* out);
void GeGluReference(const float* gate, const float* up, std::int64_t n, float* out);

// In-place softmax over n values (max-subtracted, f32 exp, double sum); returns the
// log-sum-exp of the input. -inf inputs become 0; if every input is -inf (or n == 0) the
// values become 0 and -inf is returned.
float Softmax(float* x, std::int64_t n);
float SoftmaxReference(float* x, std::int64_t n);

// y[i] += x[i]
void AddInPlace(float* y, const float* x, std::int64_t n);

// y[i] = x[i] rounded to IEEE half (fp16.h's F32ToF16: nearest even, its one quiet NaN), i < n;
// F16C's conversion where the CPU has it. A KV row's store (kv::SequenceKv::StoreRow): 64
// scalar conversions each of K and V were 0.7 us of a head's 3.6 us in a SmolLM2-135M decode
// step's attention (docs/RESULTS.md, issue 14).
void F32ToF16Row(const float* x, std::uint16_t* y, std::int64_t n);
void F32ToF16RowReference(const float* x, std::uint16_t* y, std::int64_t n);

}  // namespace smartgen::kernels
