#include "kernels/elementwise.h"

#include <cmath>

#include "kernels/fp16.h"
#include "kernels/kernel_table.h"

namespace smartgen::kernels {
namespace internal::scalar {

void RmsNorm(const float* x, const float* weight, std::int64_t n, float eps, float* out) {
  double sum = 0.0;
  for (std::int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  // (x * scale) * weight, the order of ggml's rms_norm followed by mul.
  for (std::int64_t i = 0; i < n; ++i) out[i] = (x[i] * scale) * weight[i];
}

void SwiGlu(const float* gate, const float* up, std::int64_t n, float* out) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

// ggml_gelu's tanh formula in f32.
void GeGlu(const float* gate, const float* up, std::int64_t n, float* out) {
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  constexpr float kCoefA = 0.044715f;
  for (std::int64_t i = 0; i < n; ++i) {
    const float x = gate[i];
    const float gelu = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoefA * x * x)));
    out[i] = gelu * up[i];
  }
}

float Softmax(float* x, std::int64_t n) {
  if (n <= 0) return -INFINITY;
  float max = x[0];
  for (std::int64_t i = 1; i < n; ++i) max = std::fmax(max, x[i]);
  if (max == -INFINITY) {  // every input -inf: uniform over nothing; define as zeros
    for (std::int64_t i = 0; i < n; ++i) x[i] = 0.0f;
    return -INFINITY;
  }
  double sum = 0.0;
  for (std::int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (std::int64_t i = 0; i < n; ++i) x[i] *= inv;
  return max + static_cast<float>(std::log(sum));
}

void AddInPlace(float* y, const float* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void F32ToF16Row(const float* x, std::uint16_t* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = F32ToF16(x[i]);
}

}  // namespace internal::scalar

void RmsNorm(const float* x, const float* weight, std::int64_t n, float eps, float* out) {
  internal::ActiveKernels().rms_norm(x, weight, n, eps, out);
}
void RmsNormReference(const float* x, const float* weight, std::int64_t n, float eps, float* out) {
  internal::scalar::RmsNorm(x, weight, n, eps, out);
}

void SwiGlu(const float* gate, const float* up, std::int64_t n, float* out) {
  internal::ActiveKernels().swiglu(gate, up, n, out);
}
void SwiGluReference(const float* gate, const float* up, std::int64_t n, float* out) {
  internal::scalar::SwiGlu(gate, up, n, out);
}

float Softmax(float* x, std::int64_t n) {
  return internal::ActiveKernels().softmax(x, n);
}
float SoftmaxReference(float* x, std::int64_t n) {
  return internal::scalar::Softmax(x, n);
}

void AddInPlace(float* y, const float* x, std::int64_t n) {
  internal::ActiveKernels().add_in_place(y, x, n);
}

void F32ToF16Row(const float* x, std::uint16_t* y, std::int64_t n) {
  internal::ActiveKernels().f32_to_f16(x, y, n);
}
void F32ToF16RowReference(const float* x, std::uint16_t* y, std::int64_t n) {
  internal::scalar::F32ToF16Row(x, y, n);
}

void GeGlu(const float* gate, const float* up, std::int64_t n, float* out) {
  internal::ActiveKernels().geglu(gate, up, n, out);
}
void GeGluReference(const float* gate, const float* up, std::int64_t n, float* out) {
  internal::scalar::GeGlu(gate, up, n, out);
}

}  // namespace smartgen::kernels
