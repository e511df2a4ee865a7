// Block-quantized weight formats, byte-compatible with ggml (ggml-common.h), and their exact
// dequantization (bit-identical to ggml's dequantize_row_*), plus the quantizers that
// `smartgen make-model` and the activation path of the integer GEMV use.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/ggml_type.h"
#include "kernels/fp16.h"
#include "kernels/quant_more.h"

namespace smartgen::kernels {

inline constexpr int kQK8_0 = 32;
struct BlockQ8_0 {
  f16_t d;                 // scale
  std::int8_t qs[kQK8_0];  // x[i] = d * qs[i]
};
static_assert(sizeof(BlockQ8_0) == 34);

inline constexpr int kQK4_0 = 32;
struct BlockQ4_0 {
  f16_t d;                     // scale
  std::uint8_t qs[kQK4_0 / 2];  // x[j] = d * ((qs[j] & 15) - 8), x[j + 16] = d * ((qs[j] >> 4) - 8)
};
static_assert(sizeof(BlockQ4_0) == 18);

// K-quants: super-blocks of 256 elements.
inline constexpr int kQK_K = 256;

// 8 sub-blocks of 32, each with a 6-bit scale and a 6-bit min:
//   x = d * sc[j] * q - dmin * m[j], q in [0, 15].
// Element 64 * g + l (l < 32) is the low nibble of qs[32 * g + l] (sub-block 2g); element
// 64 * g + 32 + l its high nibble (sub-block 2g + 1). scales[12] packs (sc, m) pairs as
// ggml's get_scale_min_k4 reads them.
struct BlockQ4_K {
  f16_t d;     // super-block scale of the scales
  f16_t dmin;  // super-block scale of the mins
  std::uint8_t scales[12];
  std::uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 144);

// 16 sub-blocks of 16, each with an int8 scale: x = d * scales[j] * (q - 32), q in [0, 63]
// (4 low bits in ql, 2 high bits in qh; layout as ggml's dequantize_row_q6_K walks it).
struct BlockQ6_K {
  std::uint8_t ql[kQK_K / 2];
  std::uint8_t qh[kQK_K / 4];
  std::int8_t scales[kQK_K / 16];
  f16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210);

// The 6-bit scale and min of sub-block j (< 8) of a Q4_K block (ggml's get_scale_min_k4).
inline void Q4KScaleMin(int j, const std::uint8_t* scales, std::uint8_t* sc, std::uint8_t* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = static_cast<std::uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
    *m = static_cast<std::uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// Quantizes n floats (n % 32 == 0) like ggml's quantize_row_q8_0_ref:
// d = amax / 127 (stored f16), q = round(x / d) (round half away from zero).
void QuantizeRowQ8_0(const float* x, BlockQ8_0* out, std::int64_t n);

// Quantizes n floats (n % 32 == 0) like ggml's quantize_row_q4_0_ref:
// d = max / -8 (max: the value of largest magnitude), q = min(15, (int8)(x / d + 8.5)).
void QuantizeRowQ4_0(const float* x, BlockQ4_0* out, std::int64_t n);

// Round-to-nearest K-quant encoders (n % 256 == 0), for synthetic models and tests. They write
// valid blocks that DequantizeRow reads exactly, but not ggml's bytes: ggml's quantizers search
// scales iteratively (make_qkx2_quants, make_qx_quants) for a smaller error.
void QuantizeRowQ4_K(const float* x, BlockQ4_K* out, std::int64_t n);
void QuantizeRowQ6_K(const float* x, BlockQ6_K* out, std::int64_t n);

// Dequantizes one row of n elements of `type` (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K and the
// types of quant_more.h) into f32, bit-identical to ggml's dequantize_row_*. Returns false for a type this build cannot
// dequantize.
bool DequantizeRow(gguf::GgmlType type, const void* src, float* dst, std::int64_t n);

// Converts a row of n floats into `type`'s storage (every type DequantizeRow reads; see the
// K-quant notes above and in quant_more.h). Returns false for an unsupported type. `dst` must hold gguf::RowBytes(type, n) bytes.
bool QuantizeRow(gguf::GgmlType type, const float* src, void* dst, std::int64_t n);

}  // namespace smartgen::kernels
