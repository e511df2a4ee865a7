// Q2_K, Q3_K and Q5_K (quant_more.h): dequantization as ggml's dequantize_row_q2_K/q3_K/q5_K
// (same f32 operations in the same order) and round-to-nearest encoders.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/quant.h"

namespace smartgen::kernels {
namespace {

int RoundToInt(float x) { return static_cast<int>(std::lround(x)); }

}  // namespace

// Element 128 n + 32 j + l (l < 32) is bits 2j of qs[32 n + l] in sub-block 8 n + 2 j + l / 16.
// dl = d * sc and ml = dmin * m are exact, so is dl * q: one rounding in dl * q - ml.
void DequantizeRowQ2_K(const BlockQ2_K* b, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = F16ToF32(b[i].d), dmin = F16ToF32(b[i].dmin);
    const std::uint8_t* q = b[i].qs;
    int is = 0;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int j = 0; j < 4; ++j) {
        const int shift = 2 * j;
        for (int part = 0; part < 2; ++part) {
          const std::uint8_t sc = b[i].scales[is++];
          const float dl = d * static_cast<float>(sc & 0xF), ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l) {
            *y++ = dl * static_cast<float>((q[16 * part + l] >> shift) & 3) - ml;
          }
        }
      }
    }
  }
}

// As Q2_K's layout; the high bit of element 128 n + 32 j + l is bit 4 n + j of hmask[l].
void DequantizeRowQ3_K(const BlockQ3_K* b, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = F16ToF32(b[i].d);
    const std::uint8_t* q = b[i].qs;
    const std::uint8_t* hm = b[i].hmask;
    int is = 0;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int j = 0; j < 4; ++j) {
        const int shift = 2 * j, bit = 4 * half + j;
        for (int part = 0; part < 2; ++part) {
          const float dl = d * static_cast<float>(Q3KScale(b[i].scales, is++) - 32);
          for (int l = 16 * part; l < 16 * part + 16; ++l) {
            const int v = ((q[l] >> shift) & 3) - (((hm[l] >> bit) & 1) ? 0 : 4);
            *y++ = dl * static_cast<float>(v);
          }
        }
      }
    }
  }
}

void DequantizeRowQ5_K(const BlockQ5_K* b, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = F16ToF32(b[i].d), dmin = F16ToF32(b[i].dmin);
    const std::uint8_t* ql = b[i].qs;
    const std::uint8_t* qh = b[i].qh;
    for (int g = 0; g < 4; ++g, ql += 32) {
      std::uint8_t sc, m;
      Q4KScaleMin(2 * g, b[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      Q4KScaleMin(2 * g + 1, b[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) {
        *y++ = d1 * static_cast<float>((ql[l] & 0xF) + (((qh[l] >> (2 * g)) & 1) << 4)) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        *y++ = d2 * static_cast<float>((ql[l] >> 4) + (((qh[l] >> (2 * g + 1)) & 1) << 4)) - m2;
      }
    }
  }
}

void QuantizeRowQ2_K(const float* x, BlockQ2_K* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    // Sub-block s holds elements 128 (s / 8) + 32 ((s % 8) / 2) + 16 (s % 2) + l, l < 16.
    auto elem = [](int s, int l) { return 128 * (s / 8) + 32 * ((s % 8) / 2) + 16 * (s % 2) + l; };
    float scale[16], min[16], max_scale = 0.0f, max_min = 0.0f;
    for (int s = 0; s < 16; ++s) {
      float lo = 0.0f, hi = 0.0f;
      for (int l = 0; l < 16; ++l) lo = std::min(lo, x[elem(s, l)]), hi = std::max(hi, x[elem(s, l)]);
      scale[s] = (hi - lo) / 3.0f;
      min[s] = -lo;
      max_scale = std::max(max_scale, scale[s]);
      max_min = std::max(max_min, min[s]);
    }
    BlockQ2_K& b = out[i];
    b.d = F32ToF16(max_scale / 15.0f);
    b.dmin = F32ToF16(max_min / 15.0f);
    const float d = F16ToF32(b.d), dmin = F16ToF32(b.dmin);
    std::memset(b.qs, 0, sizeof(b.qs));
    for (int s = 0; s < 16; ++s) {
      const int ls = d > 0 ? std::clamp(RoundToInt(scale[s] / d), 0, 15) : 0;
      const int lm = dmin > 0 ? std::clamp(RoundToInt(min[s] / dmin), 0, 15) : 0;
      b.scales[s] = static_cast<std::uint8_t>(ls | (lm << 4));
      const float step = d * static_cast<float>(ls), offset = dmin * static_cast<float>(lm);
      for (int l = 0; l < 16; ++l) {
        const int e = elem(s, l);
        const int q = step > 0 ? std::clamp(RoundToInt((x[e] + offset) / step), 0, 3) : 0;
        const int byte = 32 * (e / 128) + e % 32, shift = 2 * ((e % 128) / 32);
        b.qs[byte] = static_cast<std::uint8_t>(b.qs[byte] | (q << shift));
      }
    }
  }
}

void QuantizeRowQ3_K(const float* x, BlockQ3_K* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    // Same sub-block layout as Q2_K; values q in [-4, 3] with a signed per-sub-block scale.
    auto elem = [](int s, int l) { return 128 * (s / 8) + 32 * ((s % 8) / 2) + 16 * (s % 2) + l; };
    float scale[16], max_abs = 0.0f;
    for (int s = 0; s < 16; ++s) {
      float amax = 0.0f, max = 0.0f;
      for (int l = 0; l < 16; ++l) {
        const float v = x[elem(s, l)];
        if (std::fabs(v) > amax) amax = std::fabs(v), max = v;
      }
      scale[s] = max / -4.0f;
      max_abs = std::max(max_abs, std::fabs(scale[s]));
    }
    BlockQ3_K& b = out[i];
    b.d = F32ToF16(max_abs / 31.0f);
    const float d = F16ToF32(b.d);
    std::memset(b.qs, 0, sizeof(b.qs));
    std::memset(b.hmask, 0, sizeof(b.hmask));
    std::memset(b.scales, 0, sizeof(b.scales));
    for (int s = 0; s < 16; ++s) {
      const int ls = d > 0 ? std::clamp(RoundToInt(scale[s] / d), -32, 31) : 0;
      const int u = ls + 32;
      if (s < 8) {
        b.scales[s] = static_cast<std::uint8_t>(b.scales[s] | (u & 0xF));
      } else {
        b.scales[s - 8] = static_cast<std::uint8_t>(b.scales[s - 8] | ((u & 0xF) << 4));
      }
      b.scales[8 + s % 4] = static_cast<std::uint8_t>(b.scales[8 + s % 4] | ((u >> 4) << (2 * (s / 4))));
      const float step = d * static_cast<float>(ls);
      for (int l = 0; l < 16; ++l) {
        const int e = elem(s, l);
        const int q = step != 0 ? std::clamp(RoundToInt(x[e] / step), -4, 3) + 4 : 4;
        const int byte = 32 * (e / 128) + e % 32, j = (e % 128) / 32;
        b.qs[byte] = static_cast<std::uint8_t>(b.qs[byte] | ((q & 3) << (2 * j)));
        if (q >= 4) b.hmask[e % 32] = static_cast<std::uint8_t>(b.hmask[e % 32] | (1 << (4 * (e / 128) + j)));
      }
    }
  }
}

void QuantizeRowQ5_K(const float* x, BlockQ5_K* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    // Reuse the Q4_K scale packing: encode as Q4_K with 31 levels, then split the fifth bit.
    float scale[8], min[8], max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < 8; ++j) {
      float lo = 0.0f, hi = 0.0f;
      for (int l = 0; l < 32; ++l) lo = std::min(lo, x[32 * j + l]), hi = std::max(hi, x[32 * j + l]);
      scale[j] = (hi - lo) / 31.0f;
      min[j] = -lo;
      max_scale = std::max(max_scale, scale[j]);
      max_min = std::max(max_min, min[j]);
    }
    BlockQ5_K& b = out[i];
    b.d = F32ToF16(max_scale / 63.0f);
    b.dmin = F32ToF16(max_min / 63.0f);
    const float d = F16ToF32(b.d), dmin = F16ToF32(b.dmin);
    std::memset(b.scales, 0, sizeof(b.scales));
    std::memset(b.qh, 0, sizeof(b.qh));
    std::uint8_t q[kQK_K];
    for (int j = 0; j < 8; ++j) {
      const int ls = d > 0 ? std::clamp(RoundToInt(scale[j] / d), 0, 63) : 0;
      const int lm = dmin > 0 ? std::clamp(RoundToInt(min[j] / dmin), 0, 63) : 0;
      if (j < 4) {
        b.scales[j] = static_cast<std::uint8_t>(ls);
        b.scales[j + 4] = static_cast<std::uint8_t>(lm);
      } else {
        b.scales[j + 4] = static_cast<std::uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
        b.scales[j - 4] |= static_cast<std::uint8_t>((ls >> 4) << 6);
        b.scales[j] |= static_cast<std::uint8_t>((lm >> 4) << 6);
      }
      const float step = d * static_cast<float>(ls), offset = dmin * static_cast<float>(lm);
      for (int l = 0; l < 32; ++l) {
        const float v = step > 0 ? (x[32 * j + l] + offset) / step : 0.0f;
        q[32 * j + l] = static_cast<std::uint8_t>(std::clamp(RoundToInt(v), 0, 31));
      }
    }
    for (int g = 0; g < 4; ++g) {
      for (int l = 0; l < 32; ++l) {
        const int lo = q[64 * g + l], hi = q[64 * g + 32 + l];
        b.qs[32 * g + l] = static_cast<std::uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
        b.qh[l] = static_cast<std::uint8_t>(b.qh[l] | ((lo >> 4) << (2 * g)) | ((hi >> 4) << (2 * g + 1)));
      }
    }
  }
}

}  // namespace smartgen::kernels
