// Scalar IEEE half (f16) and bfloat16 conversions, bit-exact with ggml:
// f32 -> f16 and f32 -> bf16 round to nearest even; NaN stays NaN.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace smartgen::kernels {

using f16_t = std::uint16_t;   // raw IEEE binary16 bits
using bf16_t = std::uint16_t;  // raw bfloat16 bits

inline float F16ToF32(f16_t h) {
  // Exact: every f16 is representable in f32 (subnormals included).
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1f;
  std::uint32_t mant = h & 0x3ff;
  std::uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      bits = sign | static_cast<std::uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + (127 - 15)) << 23 | mant << 13;
  }
  return std::bit_cast<float>(bits);
}

inline f16_t F32ToF16(float f) {
  // Round to nearest even (the same result as F16C's vcvtps2ph with imm 0 and ggml's
  // GGML_FP32_TO_FP16 on x86).
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000;
  const std::uint32_t abs = x & 0x7fffffff;
  if (abs > 0x7f800000) return static_cast<f16_t>(sign | 0x7e00);   // NaN
  if (abs >= 0x477ff000) return static_cast<f16_t>(sign | 0x7c00);  // overflow -> inf
  if (abs < 0x38800000) {                                           // result is subnormal or zero
    // Add 0.5 as a float so the FPU rounds the mantissa to nearest even at 2^-24.
    const float r = std::bit_cast<float>(abs) + 0.5f;
    return static_cast<f16_t>(sign | (std::bit_cast<std::uint32_t>(r) - 0x3f000000u));
  }
  const std::uint32_t mant_odd = (abs >> 13) & 1;
  const std::uint32_t rounded = abs + 0xc8000fffu + mant_odd;  // rebias (-112<<23) + round
  return static_cast<f16_t>(sign | (rounded >> 13));
}

inline float Bf16ToF32(bf16_t h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

inline bf16_t F32ToBf16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<bf16_t>((x >> 16) | 64);  // quiet NaN
  return static_cast<bf16_t>((x + (0x7fff + ((x >> 16) & 1))) >> 16);
}

}  // namespace smartgen::kernels
