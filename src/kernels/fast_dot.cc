// Decode with the CPU's low-precision dot products (kernels::SetFastDot, matmul.h): the
// activation quantizer, the scalar twins, and the choice of kernel.
#include <atomic>
#include <cmath>

#include "core/cpu_features.h"
#include "kernels/kernel_table.h"
#include "kernels/matmul.h"
#include "kernels/fp16.h"
#include "kernels/quant.h"

namespace smartgen::kernels {
namespace {

std::atomic<bool> g_fast_dot{false};

}  // namespace

void SetFastDot(bool on) { g_fast_dot.store(on, std::memory_order_relaxed); }

bool FastDotActive(gguf::GgmlType type) {
  return internal::FastDotKernel(internal::ActiveKernels(), type) != nullptr;
}

namespace internal {

void QuantizeActivationsQ8(const float* x, std::int64_t n, std::int8_t* q, float* d) {
  for (std::int64_t b = 0; b < n / kQK8_0; ++b) {
    const float* xb = x + b * kQK8_0;
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
    d[b] = amax / 127.0f;
    const float id = d[b] != 0.0f ? 1.0f / d[b] : 0.0f;
    for (int j = 0; j < kQK8_0; ++j) q[b * kQK8_0 + j] = static_cast<std::int8_t>(std::nearbyint(xb[j] * id));
  }
}

MatVecFn FastDotKernel(const KernelTable& table, gguf::GgmlType type) {
  if (!g_fast_dot.load(std::memory_order_relaxed)) return nullptr;
  const bool q8 = type == gguf::GgmlType::kQ8_0, bf16 = type == gguf::GgmlType::kBF16;
#if defined(SMARTGEN_KERNELS_X86)
  if (table.isa == Isa::kAvx512) {
    const core::CpuFeatures& f = core::GetCpuFeatures();
    if (q8 && f.avx512vnni) return avx512vnni::MatVecQ8_0;
    if (bf16 && f.avx512bf16) return avx512bf16::MatVecBF16;
  }
#endif
  if (table.isa == Isa::kScalar) {
    if (q8) return scalar::MatVecQ8_0Int8;
    if (bf16) return scalar::MatVecBF16Bf16;
  }
  return nullptr;  // no such instructions on this table: the exact f32 path
}

namespace scalar {

void MatVecQ8_0Int8(const void* w, std::size_t row_bytes, std::int64_t cols, const float* x,
                    float* y, std::int64_t r0, std::int64_t r1) {
  const std::int64_t nb = cols / kQK8_0;
  float* scratch = ThreadScratch(4, static_cast<std::size_t>(cols / 4 + nb));
  auto* q = reinterpret_cast<std::int8_t*>(scratch);
  float* d = scratch + cols / 4;
  QuantizeActivationsQ8(x, cols, q, d);
  for (std::int64_t r = r0; r < r1; ++r) {
    const auto* blocks = reinterpret_cast<const BlockQ8_0*>(static_cast<const std::byte*>(w) + r * row_bytes);
    float sum = 0.0f;
    for (std::int64_t b = 0; b < nb; ++b) {
      std::int32_t isum = 0;
      for (int j = 0; j < kQK8_0; ++j) isum += blocks[b].qs[j] * q[b * kQK8_0 + j];
      sum += (F16ToF32(blocks[b].d) * d[b]) * static_cast<float>(isum);
    }
    y[r] = sum;
  }
}

void MatVecBF16Bf16(const void* w, std::size_t row_bytes, std::int64_t cols, const float* x,
                    float* y, std::int64_t r0, std::int64_t r1) {
  float* xr = ThreadScratch(4, static_cast<std::size_t>(cols));
  for (std::int64_t k = 0; k < cols; ++k) xr[k] = Bf16ToF32(F32ToBf16(x[k]));  // nearest even
  for (std::int64_t r = r0; r < r1; ++r) {
    const auto* row = reinterpret_cast<const bf16_t*>(static_cast<const std::byte*>(w) + r * row_bytes);
    float sum = 0.0f;
    for (std::int64_t k = 0; k < cols; ++k) sum += Bf16ToF32(row[k]) * xr[k];
    y[r] = sum;
  }
}

}  // namespace scalar
}  // namespace internal
}  // namespace smartgen::kernels
