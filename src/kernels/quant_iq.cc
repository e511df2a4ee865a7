// IQ4_NL and IQ4_XS (quant_more.h): dequantization as ggml's dequantize_row_iq4_nl/iq4_xs and
// round-to-nearest encoders onto the IQ4 grid.
#include <algorithm>
#include <cmath>

#include "kernels/quant_more.h"

namespace smartgen::kernels {
namespace {

// Index of the grid level nearest to v (v in grid units).
int NearestLevel(float v) {
  int best = 0;
  for (int k = 1; k < 16; ++k) {
    if (std::fabs(v - kIq4nlValues[k]) < std::fabs(v - kIq4nlValues[best])) best = k;
  }
  return best;
}

// qs[16] of 32 values with scale d (x ~ d * level).
void EncodeNibbles(const float* x, float d, std::uint8_t* qs) {
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<std::uint8_t>(NearestLevel(x[j] * id) | (NearestLevel(x[j + 16] * id) << 4));
  }
}

// The scale that maps the block's value of largest magnitude onto the grid's end of that sign.
float GridScale(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
  }
  return max < 0 ? max / kIq4nlValues[0] : max / kIq4nlValues[15];
}

}  // namespace

void DequantizeRowIq4Nl(const BlockIq4Nl* b, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / 32; ++i, y += 32) {
    const float d = F16ToF32(b[i].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(kIq4nlValues[b[i].qs[j] & 0xF]);
      y[j + 16] = d * static_cast<float>(kIq4nlValues[b[i].qs[j] >> 4]);
    }
  }
}

// dl = d * (ls - 32) is exact; dl * level rounds once, as in ggml.
void DequantizeRowIq4Xs(const BlockIq4Xs* b, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / 256; ++i) {
    const float d = F16ToF32(b[i].d);
    const std::uint8_t* qs = b[i].qs;
    for (int ib = 0; ib < 8; ++ib, qs += 16, y += 32) {
      const int ls = ((b[i].scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) |
                     (((b[i].scales_h >> (2 * ib)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * static_cast<float>(kIq4nlValues[qs[j] & 0xF]);
        y[j + 16] = dl * static_cast<float>(kIq4nlValues[qs[j] >> 4]);
      }
    }
  }
}

void QuantizeRowIq4Nl(const float* x, BlockIq4Nl* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n / 32; ++i, x += 32) {
    out[i].d = F32ToF16(GridScale(x));
    EncodeNibbles(x, F16ToF32(out[i].d), out[i].qs);
  }
}

void QuantizeRowIq4Xs(const float* x, BlockIq4Xs* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n / 256; ++i, x += 256) {
    float scale[8], max_abs = 0.0f;
    for (int ib = 0; ib < 8; ++ib) {
      scale[ib] = GridScale(x + 32 * ib);
      max_abs = std::max(max_abs, std::fabs(scale[ib]));
    }
    BlockIq4Xs& b = out[i];
    b.d = F32ToF16(max_abs / 31.0f);
    const float d = F16ToF32(b.d);
    b.scales_h = 0;
    for (int k = 0; k < 4; ++k) b.scales_l[k] = 0;
    for (int ib = 0; ib < 8; ++ib) {
      const int ls = d > 0 ? std::clamp(static_cast<int>(std::lround(scale[ib] / d)), -32, 31) : 0;
      const int u = ls + 32;
      b.scales_l[ib / 2] = static_cast<std::uint8_t>(b.scales_l[ib / 2] | ((u & 0xF) << (4 * (ib % 2))));
      b.scales_h = static_cast<std::uint16_t>(b.scales_h | ((u >> 4) << (2 * ib)));
      EncodeNibbles(x + 32 * ib, d * static_cast<float>(ls), b.qs + 16 * ib);
    }
  }
}

}  // namespace smartgen::kernels
