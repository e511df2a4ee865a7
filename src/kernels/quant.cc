#include "kernels/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace smartgen::kernels {

void QuantizeRowQ8_0(const float* x, BlockQ8_0* out, std::int64_t n) {
  const std::int64_t nb = n / kQK8_0;
  for (std::int64_t i = 0; i < nb; ++i) {
    const float* xb = x + i * kQK8_0;
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
    const float d = amax / ((1 << 7) - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    out[i].d = F32ToF16(d);
    for (int j = 0; j < kQK8_0; ++j) {
      out[i].qs[j] = static_cast<std::int8_t>(std::roundf(xb[j] * id));
    }
  }
}

void QuantizeRowQ4_0(const float* x, BlockQ4_0* out, std::int64_t n) {
  const std::int64_t nb = n / kQK4_0;
  for (std::int64_t i = 0; i < nb; ++i) {
    const float* xb = x + i * kQK4_0;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK4_0; ++j) {
      if (amax < std::fabs(xb[j])) {
        amax = std::fabs(xb[j]);
        max = xb[j];
      }
    }
    const float d = max / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    out[i].d = F32ToF16(d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const int lo = std::min(15, static_cast<int>(static_cast<std::int8_t>(xb[j] * id + 8.5f)));
      const int hi = std::min(15, static_cast<int>(static_cast<std::int8_t>(xb[j + 16] * id + 8.5f)));
      out[i].qs[j] = static_cast<std::uint8_t>(lo | (hi << 4));
    }
  }
}

namespace {

void DequantizeQ4_0(const BlockQ4_0* b, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQK4_0; ++i, y += kQK4_0) {
    const float d = F16ToF32(b[i].d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      y[j] = static_cast<float>((b[i].qs[j] & 0x0F) - 8) * d;
      y[j + 16] = static_cast<float>((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

// As ggml: d1 = d * sc and m1 = dmin * m in f32, then d1 * q - m1 (d1 * q is exact, so the
// result does not depend on FMA contraction).
void DequantizeQ4_K(const BlockQ4_K* b, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = F16ToF32(b[i].d), dmin = F16ToF32(b[i].dmin);
    const std::uint8_t* q = b[i].qs;
    for (int g = 0; g < 4; ++g, q += 32) {
      std::uint8_t sc, m;
      Q4KScaleMin(2 * g, b[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      Q4KScaleMin(2 * g + 1, b[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

// As ggml: (d * scale) * q, left to right.
void DequantizeQ6_K(const BlockQ6_K* b, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = F16ToF32(b[i].d);
    const std::uint8_t* ql = b[i].ql;
    const std::uint8_t* qh = b[i].qh;
    const std::int8_t* sc = b[i].scales;
    for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

}  // namespace

bool DequantizeRow(gguf::GgmlType type, const void* src, float* dst, std::int64_t n) {
  switch (type) {
    case gguf::GgmlType::kF32:
      std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
      return true;
    case gguf::GgmlType::kF16: {
      const auto* h = static_cast<const f16_t*>(src);
      for (std::int64_t i = 0; i < n; ++i) dst[i] = F16ToF32(h[i]);
      return true;
    }
    case gguf::GgmlType::kBF16: {
      const auto* h = static_cast<const bf16_t*>(src);
      for (std::int64_t i = 0; i < n; ++i) dst[i] = Bf16ToF32(h[i]);
      return true;
    }
    case gguf::GgmlType::kQ8_0: {
      const auto* b = static_cast<const BlockQ8_0*>(src);
      for (std::int64_t i = 0; i < n / kQK8_0; ++i) {
        const float d = F16ToF32(b[i].d);
        for (int j = 0; j < kQK8_0; ++j) dst[i * kQK8_0 + j] = static_cast<float>(b[i].qs[j]) * d;
      }
      return true;
    }
    case gguf::GgmlType::kQ4_0:
      DequantizeQ4_0(static_cast<const BlockQ4_0*>(src), dst, n);
      return true;
    case gguf::GgmlType::kQ4_K:
      DequantizeQ4_K(static_cast<const BlockQ4_K*>(src), dst, n);
      return true;
    case gguf::GgmlType::kQ6_K:
      DequantizeQ6_K(static_cast<const BlockQ6_K*>(src), dst, n);
      return true;
    case gguf::GgmlType::kQ4_1:
      DequantizeRowQ4_1(static_cast<const BlockQ4_1*>(src), dst, n);
      return true;
    case gguf::GgmlType::kQ5_0:
      DequantizeRowQ5_0(static_cast<const BlockQ5_0*>(src), dst, n);
      return true;
    case gguf::GgmlType::kQ5_1:
      DequantizeRowQ5_1(static_cast<const BlockQ5_1*>(src), dst, n);
      return true;
    case gguf::GgmlType::kQ2_K:
      DequantizeRowQ2_K(static_cast<const BlockQ2_K*>(src), dst, n);
      return true;
    case gguf::GgmlType::kQ3_K:
      DequantizeRowQ3_K(static_cast<const BlockQ3_K*>(src), dst, n);
      return true;
    case gguf::GgmlType::kQ5_K:
      DequantizeRowQ5_K(static_cast<const BlockQ5_K*>(src), dst, n);
      return true;
    case gguf::GgmlType::kIQ4_NL:
      DequantizeRowIq4Nl(static_cast<const BlockIq4Nl*>(src), dst, n);
      return true;
    case gguf::GgmlType::kIQ4_XS:
      DequantizeRowIq4Xs(static_cast<const BlockIq4Xs*>(src), dst, n);
      return true;
    default:
      return false;
  }
}

bool QuantizeRow(gguf::GgmlType type, const float* src, void* dst, std::int64_t n) {
  switch (type) {
    case gguf::GgmlType::kF32:
      std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
      return true;
    case gguf::GgmlType::kF16: {
      auto* h = static_cast<f16_t*>(dst);
      for (std::int64_t i = 0; i < n; ++i) h[i] = F32ToF16(src[i]);
      return true;
    }
    case gguf::GgmlType::kBF16: {
      auto* h = static_cast<bf16_t*>(dst);
      for (std::int64_t i = 0; i < n; ++i) h[i] = F32ToBf16(src[i]);
      return true;
    }
    case gguf::GgmlType::kQ8_0:
      QuantizeRowQ8_0(src, static_cast<BlockQ8_0*>(dst), n);
      return true;
    case gguf::GgmlType::kQ4_0:
      QuantizeRowQ4_0(src, static_cast<BlockQ4_0*>(dst), n);
      return true;
    case gguf::GgmlType::kQ4_K:
      QuantizeRowQ4_K(src, static_cast<BlockQ4_K*>(dst), n);
      return true;
    case gguf::GgmlType::kQ6_K:
      QuantizeRowQ6_K(src, static_cast<BlockQ6_K*>(dst), n);
      return true;
    case gguf::GgmlType::kQ4_1:
      QuantizeRowQ4_1(src, static_cast<BlockQ4_1*>(dst), n);
      return true;
    case gguf::GgmlType::kQ5_0:
      QuantizeRowQ5_0(src, static_cast<BlockQ5_0*>(dst), n);
      return true;
    case gguf::GgmlType::kQ5_1:
      QuantizeRowQ5_1(src, static_cast<BlockQ5_1*>(dst), n);
      return true;
    case gguf::GgmlType::kQ2_K:
      QuantizeRowQ2_K(src, static_cast<BlockQ2_K*>(dst), n);
      return true;
    case gguf::GgmlType::kQ3_K:
      QuantizeRowQ3_K(src, static_cast<BlockQ3_K*>(dst), n);
      return true;
    case gguf::GgmlType::kQ5_K:
      QuantizeRowQ5_K(src, static_cast<BlockQ5_K*>(dst), n);
      return true;
    case gguf::GgmlType::kIQ4_NL:
      QuantizeRowIq4Nl(src, static_cast<BlockIq4Nl*>(dst), n);
      return true;
    case gguf::GgmlType::kIQ4_XS:
      QuantizeRowIq4Xs(src, static_cast<BlockIq4Xs*>(dst), n);
      return true;
    default:
      return false;
  }
}

}  // namespace smartgen::kernels
