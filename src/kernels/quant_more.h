// The rest of ggml's weight formats that common llama-quantize recipes produce (Q4_1, Q5_0,
// Q5_1: 32-element blocks; Q2_K, Q3_K, Q5_K: 256-element super-blocks; IQ4_NL, IQ4_XS: the
// non-linear 4-bit grid), byte-compatible with ggml's block structs, and their dequantizers,
// bit-identical to ggml's dequantize_row_* (the arithmetic is done in the same f32 order).
// Included by quant.h; DequantizeRow / QuantizeRow there dispatch to these.
#pragma once

#include <cstdint>

#include "kernels/fp16.h"

namespace smartgen::kernels {

// x = d * q + m, q in [0, 15]: low nibbles are elements 0..15, high nibbles 16..31.
struct BlockQ4_1 {
  f16_t d, m;
  std::uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_1) == 20);

// x = d * (q - 16), q in [0, 31]: nibbles as Q4_0, bit j of the little-endian qh word is the
// fifth bit of element j.
struct BlockQ5_0 {
  f16_t d;
  std::uint8_t qh[4];
  std::uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_0) == 22);

// x = d * q + m, q in [0, 31], bits as Q5_0.
struct BlockQ5_1 {
  f16_t d, m;
  std::uint8_t qh[4];
  std::uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_1) == 24);

// 16 sub-blocks of 16: x = d * (sc & 15) * q - dmin * (sc >> 4), q in [0, 3]. Byte l of each
// 32-byte quarter of qs holds the 2-bit values of four sub-blocks (shifts 0, 2, 4, 6).
struct BlockQ2_K {
  std::uint8_t scales[16];
  std::uint8_t qs[64];
  f16_t d, dmin;
};
static_assert(sizeof(BlockQ2_K) == 84);

// 16 sub-blocks of 16: x = d * (s - 32) * (q - 4 * !hbit), q in [0, 3] (qs as Q2_K), hbit
// from hmask (bit k of byte l for the k-th 32-element group of the half), s 6-bit packed in
// scales[12] (low nibbles in bytes 0..7, high 2 bits in bytes 8..11).
struct BlockQ3_K {
  std::uint8_t hmask[32];
  std::uint8_t qs[64];
  std::uint8_t scales[12];
  f16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110);

// The 6-bit scale j (< 16) of a Q3_K block's scales[12], before the -32 offset.
inline int Q3KScale(const std::uint8_t* s, int j) {
  const int low = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
  const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return low | (high << 4);
}

// As Q4_K plus a fifth bit per element: element 64 g + l (l < 32) takes bit 2g of qh[l],
// element 64 g + 32 + l bit 2g + 1. x = d * sc * q - dmin * m, q in [0, 31].
struct BlockQ5_K {
  f16_t d, dmin;
  std::uint8_t scales[12];
  std::uint8_t qh[32];
  std::uint8_t qs[128];
};
static_assert(sizeof(BlockQ5_K) == 176);

// x = d * kIq4nlValues[q], q a nibble (layout as Q4_0).
struct BlockIq4Nl {
  f16_t d;
  std::uint8_t qs[16];
};
static_assert(sizeof(BlockIq4Nl) == 18);

// 8 sub-blocks of 32 with 6-bit scales ls (low 4 bits in scales_l, high 2 in scales_h):
// x = d * (ls - 32) * kIq4nlValues[q], each sub-block's 16 bytes laid out as IQ4_NL.
struct BlockIq4Xs {
  f16_t d;
  std::uint16_t scales_h;
  std::uint8_t scales_l[4];
  std::uint8_t qs[128];
};
static_assert(sizeof(BlockIq4Xs) == 136);

// The 16 levels of the IQ4 grid.
inline constexpr std::int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                 1,    13,   25,  38,  53,  69,  89,  113};

// Dequantizers (n a multiple of the block size), bit-identical to ggml.
void DequantizeRowQ4_1(const BlockQ4_1* b, float* y, std::int64_t n);
void DequantizeRowQ5_0(const BlockQ5_0* b, float* y, std::int64_t n);
void DequantizeRowQ5_1(const BlockQ5_1* b, float* y, std::int64_t n);
void DequantizeRowQ2_K(const BlockQ2_K* b, float* y, std::int64_t n);
void DequantizeRowQ3_K(const BlockQ3_K* b, float* y, std::int64_t n);
void DequantizeRowQ5_K(const BlockQ5_K* b, float* y, std::int64_t n);
void DequantizeRowIq4Nl(const BlockIq4Nl* b, float* y, std::int64_t n);
void DequantizeRowIq4Xs(const BlockIq4Xs* b, float* y, std::int64_t n);

// Encoders for synthetic models and tests. Q4_1, Q5_0 and Q5_1 follow ggml's reference
// quantizers (quantize_row_q*_ref: min/max scaling, round half up); the others are
// round-to-nearest with simple scale choices: valid blocks that the dequantizers read exactly,
// but not the bytes ggml's searching quantizers would write.
void QuantizeRowQ4_1(const float* x, BlockQ4_1* out, std::int64_t n);
void QuantizeRowQ5_0(const float* x, BlockQ5_0* out, std::int64_t n);
void QuantizeRowQ5_1(const float* x, BlockQ5_1* out, std::int64_t n);
void QuantizeRowQ2_K(const float* x, BlockQ2_K* out, std::int64_t n);
void QuantizeRowQ3_K(const float* x, BlockQ3_K* out, std::int64_t n);
void QuantizeRowQ5_K(const float* x, BlockQ5_K* out, std::int64_t n);
void QuantizeRowIq4Nl(const float* x, BlockIq4Nl* out, std::int64_t n);
void QuantizeRowIq4Xs(const float* x, BlockIq4Xs* out, std::int64_t n);

}  // namespace smartgen::kernels
