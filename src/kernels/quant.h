// Block-quantized weight formats, byte-compatible with ggml (ggml-common.h), and their exact
// dequantization (bit-identical to ggml's dequantize_row_*), plus the quantizers that
// `smartgen make-model` and the activation path of the integer GEMV use.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/ggml_type.h"
#include "kernels/fp16.h"

namespace smartgen::kernels {

inline constexpr int kQK8_0 = 32;
struct BlockQ8_0 {
  f16_t d;                 // scale
  std::int8_t qs[kQK8_0];  // x[i] = d * qs[i]
};
static_assert(sizeof(BlockQ8_0) == 34);

// Quantizes n floats (n % 32 == 0) like ggml's quantize_row_q8_0_ref:
// d = amax / 127 (stored f16), q = round(x / d) (round half away from zero).
void QuantizeRowQ8_0(const float* x, BlockQ8_0* out, std::int64_t n);

// Dequantizes one row of n elements of `type` (F32, F16, BF16, Q8_0; more types as supported)
// into f32, exactly as ggml does. Returns false for a type this build cannot dequantize.
bool DequantizeRow(gguf::GgmlType type, const void* src, float* dst, std::int64_t n);

// Converts a row of n floats into `type`'s storage (F32, F16, BF16, Q8_0). Returns false for
// an unsupported type. `dst` must hold gguf::RowBytes(type, n) bytes.
bool QuantizeRow(gguf::GgmlType type, const float* src, void* dst, std::int64_t n);

}  // namespace smartgen::kernels
