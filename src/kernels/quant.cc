#include "kernels/quant.h"

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
    default:
      return false;
  }
}

}  // namespace smartgen::kernels
