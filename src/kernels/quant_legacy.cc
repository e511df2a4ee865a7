// Q4_1, Q5_0 and Q5_1 (quant_more.h): dequantization as ggml's dequantize_row_q4_1/q5_0/q5_1
// and encoders as its quantize_row_q*_ref.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/quant_more.h"

namespace smartgen::kernels {
namespace {

constexpr int kQK = 32;

std::uint32_t LoadQh(const std::uint8_t* qh) {
  std::uint32_t v;
  std::memcpy(&v, qh, 4);
  return v;
}

void MinMax(const float* x, float* lo, float* hi) {
  *lo = INFINITY;
  *hi = -INFINITY;
  for (int j = 0; j < kQK; ++j) *lo = std::min(*lo, x[j]), *hi = std::max(*hi, x[j]);
}

}  // namespace

// d * q is exact (11- and 4/5-bit significands), so d * q + m rounds once with or without FMA.
void DequantizeRowQ4_1(const BlockQ4_1* b, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = F16ToF32(b[i].d), m = F16ToF32(b[i].m);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>(b[i].qs[j] & 0xF) * d + m;
      y[j + 16] = static_cast<float>(b[i].qs[j] >> 4) * d + m;
    }
  }
}

void DequantizeRowQ5_0(const BlockQ5_0* b, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = F16ToF32(b[i].d);
    const std::uint32_t qh = LoadQh(b[i].qh);
    for (int j = 0; j < 16; ++j) {
      const int h0 = static_cast<int>(((qh >> j) << 4) & 0x10);
      const int h1 = static_cast<int>((qh >> (j + 12)) & 0x10);
      y[j] = static_cast<float>(((b[i].qs[j] & 0xF) | h0) - 16) * d;
      y[j + 16] = static_cast<float>(((b[i].qs[j] >> 4) | h1) - 16) * d;
    }
  }
}

void DequantizeRowQ5_1(const BlockQ5_1* b, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = F16ToF32(b[i].d), m = F16ToF32(b[i].m);
    const std::uint32_t qh = LoadQh(b[i].qh);
    for (int j = 0; j < 16; ++j) {
      const int h0 = static_cast<int>(((qh >> j) << 4) & 0x10);
      const int h1 = static_cast<int>((qh >> (j + 12)) & 0x10);
      y[j] = static_cast<float>((b[i].qs[j] & 0xF) | h0) * d + m;
      y[j + 16] = static_cast<float>((b[i].qs[j] >> 4) | h1) * d + m;
    }
  }
}

void QuantizeRowQ4_1(const float* x, BlockQ4_1* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    float lo, hi;
    MinMax(x, &lo, &hi);
    const float d = (hi - lo) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    out[i].d = F32ToF16(d);
    out[i].m = F32ToF16(lo);
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(15, static_cast<int>(static_cast<std::int8_t>((x[j] - lo) * id + 0.5f)));
      const int q1 =
          std::min(15, static_cast<int>(static_cast<std::int8_t>((x[j + 16] - lo) * id + 0.5f)));
      out[i].qs[j] = static_cast<std::uint8_t>(q0 | (q1 << 4));
    }
  }
}

void QuantizeRowQ5_0(const float* x, BlockQ5_0* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK; ++j) {
      if (amax < std::fabs(x[j])) amax = std::fabs(x[j]), max = x[j];
    }
    const float d = max / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    out[i].d = F32ToF16(d);
    std::uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(31, static_cast<int>(static_cast<std::int8_t>(x[j] * id + 16.5f)));
      const int q1 = std::min(31, static_cast<int>(static_cast<std::int8_t>(x[j + 16] * id + 16.5f)));
      out[i].qs[j] = static_cast<std::uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
      qh |= static_cast<std::uint32_t>((q0 & 0x10) >> 4) << j;
      qh |= static_cast<std::uint32_t>((q1 & 0x10) >> 4) << (j + 16);
    }
    std::memcpy(out[i].qh, &qh, 4);
  }
}

void QuantizeRowQ5_1(const float* x, BlockQ5_1* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    float lo, hi;
    MinMax(x, &lo, &hi);
    const float d = (hi - lo) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    out[i].d = F32ToF16(d);
    out[i].m = F32ToF16(lo);
    std::uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(31, static_cast<int>((x[j] - lo) * id + 0.5f));
      const int q1 = std::min(31, static_cast<int>((x[j + 16] - lo) * id + 0.5f));
      out[i].qs[j] = static_cast<std::uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
      qh |= static_cast<std::uint32_t>((q0 & 0x10) >> 4) << j;
      qh |= static_cast<std::uint32_t>((q1 & 0x10) >> 4) << (j + 16);
    }
    std::memcpy(out[i].qh, &qh, 4);
  }
}

}  // namespace smartgen::kernels
