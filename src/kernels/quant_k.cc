// Round-to-nearest encoders for the K-quant blocks (quant.h). Dequantization lives in quant.cc
// with the other types.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/quant.h"

namespace smartgen::kernels {
namespace {

int Nearest(float x) { return static_cast<int>(std::lround(x)); }

}  // namespace

void QuantizeRowQ4_K(const float* x, BlockQ4_K* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    // Per sub-block of 32: x ~ scale * q - min with q in [0, 15] and min >= 0.
    float scale[8], min[8], max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < 8; ++j) {
      const float* xs = x + 32 * j;
      float lo = 0.0f, hi = 0.0f;
      for (int l = 0; l < 32; ++l) lo = std::min(lo, xs[l]), hi = std::max(hi, xs[l]);
      scale[j] = (hi - lo) / 15.0f;
      min[j] = -lo;
      max_scale = std::max(max_scale, scale[j]);
      max_min = std::max(max_min, min[j]);
    }
    // Scales and mins as 6-bit multiples of the super-block's d and dmin.
    const float d = max_scale / 63.0f, dmin = max_min / 63.0f;
    BlockQ4_K& b = out[i];
    b.d = F32ToF16(d);
    b.dmin = F32ToF16(dmin);
    const float d_used = F16ToF32(b.d), dmin_used = F16ToF32(b.dmin);
    std::memset(b.scales, 0, sizeof(b.scales));
    std::uint8_t q[kQK_K];
    for (int j = 0; j < 8; ++j) {
      const int ls = d_used > 0 ? std::clamp(Nearest(scale[j] / d_used), 0, 63) : 0;
      const int lm = dmin_used > 0 ? std::clamp(Nearest(min[j] / dmin_used), 0, 63) : 0;
      if (j < 4) {
        b.scales[j] = static_cast<std::uint8_t>(ls);
        b.scales[j + 4] = static_cast<std::uint8_t>(lm);
      } else {
        b.scales[j + 4] = static_cast<std::uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
        b.scales[j - 4] |= static_cast<std::uint8_t>((ls >> 4) << 6);
        b.scales[j] |= static_cast<std::uint8_t>((lm >> 4) << 6);
      }
      const float step = d_used * static_cast<float>(ls), offset = dmin_used * static_cast<float>(lm);
      for (int l = 0; l < 32; ++l) {
        const float v = step > 0 ? (x[32 * j + l] + offset) / step : 0.0f;
        q[32 * j + l] = static_cast<std::uint8_t>(std::clamp(Nearest(v), 0, 15));
      }
    }
    for (int g = 0; g < 4; ++g) {
      for (int l = 0; l < 32; ++l) {
        b.qs[32 * g + l] = static_cast<std::uint8_t>(q[64 * g + l] | (q[64 * g + 32 + l] << 4));
      }
    }
  }
}

void QuantizeRowQ6_K(const float* x, BlockQ6_K* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    // Per sub-block of 16: x ~ scale * (q - 32) with q - 32 in [-32, 31].
    float scale[16], max_abs_scale = 0.0f;
    for (int j = 0; j < 16; ++j) {
      float amax = 0.0f;
      for (int l = 0; l < 16; ++l) amax = std::max(amax, std::fabs(x[16 * j + l]));
      scale[j] = amax / 31.0f;
      max_abs_scale = std::max(max_abs_scale, scale[j]);
    }
    const float d = max_abs_scale / 127.0f;
    BlockQ6_K& b = out[i];
    b.d = F32ToF16(d);
    const float d_used = F16ToF32(b.d);
    std::uint8_t q[kQK_K];
    for (int j = 0; j < 16; ++j) {
      const int ls = d_used > 0 ? std::clamp(Nearest(scale[j] / d_used), -128, 127) : 0;
      b.scales[j] = static_cast<std::int8_t>(ls);
      const float step = d_used * static_cast<float>(ls);
      for (int l = 0; l < 16; ++l) {
        const float v = step != 0 ? x[16 * j + l] / step : 0.0f;
        q[16 * j + l] = static_cast<std::uint8_t>(std::clamp(Nearest(v), -32, 31) + 32);
      }
    }
    for (int half = 0; half < 2; ++half) {
      const std::uint8_t* qq = q + 128 * half;
      for (int l = 0; l < 32; ++l) {
        b.ql[64 * half + l] = static_cast<std::uint8_t>((qq[l] & 0xF) | ((qq[l + 64] & 0xF) << 4));
        b.ql[64 * half + l + 32] =
            static_cast<std::uint8_t>((qq[l + 32] & 0xF) | ((qq[l + 96] & 0xF) << 4));
        b.qh[32 * half + l] = static_cast<std::uint8_t>((qq[l] >> 4) | ((qq[l + 32] >> 4) << 2) |
                                                        ((qq[l + 64] >> 4) << 4) |
                                                        ((qq[l + 96] >> 4) << 6));
      }
    }
  }
}

}  // namespace smartgen::kernels
