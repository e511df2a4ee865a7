// Decode with the CPU's low-precision dot products (kernels::SetFastDot, matmul.h): the
// activation quantizer and preparation, the scalar twins, and the choice of kernel.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/cpu_features.h"
#include "kernels/kernel_table.h"
#include "kernels/matmul.h"
#include "kernels/fp16.h"
#include "kernels/quant.h"
#include "kernels/quant_more.h"

namespace smartgen::kernels {
namespace {

std::atomic<bool> g_fast_dot{false};

}  // namespace

void SetFastDot(bool on) { g_fast_dot.store(on, std::memory_order_relaxed); }

bool FastDotActive(gguf::GgmlType type) {
  internal::PrepareActFn prepare = nullptr;
  return internal::FastDotKernel(internal::ActiveKernels(), type) != nullptr ||
         internal::FastDotActKernel(internal::ActiveKernels(), type, &prepare) != nullptr;
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
  if (!g_fast_dot.load(std::memory_order_relaxed) || type != gguf::GgmlType::kBF16) return nullptr;
#if defined(SMARTGEN_KERNELS_X86)
  if (table.isa == Isa::kAvx512 && core::GetCpuFeatures().avx512bf16) return avx512bf16::MatVecBF16;
#endif
  if (table.isa == Isa::kScalar) return scalar::MatVecBF16Bf16;
  return nullptr;  // no such instructions on this table: the exact f32 path
}

MatMulFn FastDotMulKernel(const KernelTable& table, gguf::GgmlType type) {
  if (!g_fast_dot.load(std::memory_order_relaxed) || type != gguf::GgmlType::kBF16) return nullptr;
#if defined(SMARTGEN_KERNELS_X86)
  if (table.isa == Isa::kAvx512 && core::GetCpuFeatures().avx512bf16) return avx512bf16::MatMulBF16;
#endif
  if (table.isa == Isa::kScalar) return scalar::MatMulBF16Bf16;
  return nullptr;
}

MatVecActFn FastDotActKernel(const KernelTable& table, gguf::GgmlType type, PrepareActFn* prepare) {
  if (!g_fast_dot.load(std::memory_order_relaxed)) return nullptr;
  // Every kind has integer dots in every table (AVX-512 without VNNI takes the AVX2 ones).
  const int kind = type == gguf::GgmlType::kQ8_0     ? 0
                   : type == gguf::GgmlType::kQ4_0   ? 1
                   : type == gguf::GgmlType::kQ5_0   ? 2
                   : type == gguf::GgmlType::kQ4_K   ? 3
                   : type == gguf::GgmlType::kQ6_K   ? 4
                   : type == gguf::GgmlType::kQ5_K   ? 5
                   : type == gguf::GgmlType::kIQ4_NL ? 6
                   : type == gguf::GgmlType::kIQ4_XS ? 7
                   : type == gguf::GgmlType::kQ4_1   ? 8
                   : type == gguf::GgmlType::kQ5_1   ? 9
                   : type == gguf::GgmlType::kQ2_K   ? 10
                   : type == gguf::GgmlType::kQ3_K   ? 11
                                                     : -1;
  if (kind < 0) return nullptr;
#if defined(SMARTGEN_KERNELS_X86)
  if (table.isa == Isa::kAvx512 && core::GetCpuFeatures().avx512vnni) {
    *prepare = avx512vnni::PrepareActQ8;
    const MatVecActFn fns[] = {
        avx512vnni::MatVecQ8_0,  avx512vnni::MatVecQ4_0,  avx512vnni::MatVecQ5_0,
        avx512vnni::MatVecQ4_K,  avx512vnni::MatVecQ6_K,  avx512vnni::MatVecQ5_K,
        avx512vnni::MatVecIq4Nl, avx512vnni::MatVecIq4Xs, avx512vnni::MatVecQ4_1,
        avx512vnni::MatVecQ5_1,  avx512vnni::MatVecQ2_K,  avx512vnni::MatVecQ3_K};
    return fns[kind];
  }
  // AVX2, and AVX-512 without VNNI: the AVX2 integer dots.
  if (table.isa == Isa::kAvx2 || table.isa == Isa::kAvx512) {
    *prepare = avx2::PrepareActQ8;
    const MatVecActFn fns[] = {avx2::MatVecQ8_0Act,  avx2::MatVecQ4_0Act,  avx2::MatVecQ5_0Act,
                               avx2::MatVecQ4_KAct,  avx2::MatVecQ6_KAct,  avx2::MatVecQ5_KAct,
                               avx2::MatVecIq4NlAct, avx2::MatVecIq4XsAct, avx2::MatVecQ4_1Act,
                               avx2::MatVecQ5_1Act,  avx2::MatVecQ2_KAct,  avx2::MatVecQ3_KAct};
    return fns[kind];
  }
#endif
  if (table.isa == Isa::kScalar) {
    *prepare = scalar::PrepareActQ8;
    const MatVecActFn fns[] = {
        scalar::MatVecQ8_0Act,  scalar::MatVecQ4_0Act,  scalar::MatVecQ5_0Act,
        scalar::MatVecQ4_KAct,  scalar::MatVecQ6_KAct,  scalar::MatVecQ5_KAct,
        scalar::MatVecIq4NlAct, scalar::MatVecIq4XsAct, scalar::MatVecQ4_1Act,
        scalar::MatVecQ5_1Act,  scalar::MatVecQ2_KAct,  scalar::MatVecQ3_KAct};
    return fns[kind];
  }
  return nullptr;
}

MatMulActFn FastDotBatchKernel(const KernelTable& table, gguf::GgmlType type) {
  if (!g_fast_dot.load(std::memory_order_relaxed)) return nullptr;
#if defined(SMARTGEN_KERNELS_X86)
  if (table.isa == Isa::kAvx512 && core::GetCpuFeatures().avx512vnni) {
    switch (type) {
      case gguf::GgmlType::kQ8_0: return avx512vnni::MatMulQ8_0;
      case gguf::GgmlType::kQ4_0: return avx512vnni::MatMulQ4_0;
      case gguf::GgmlType::kQ5_0: return avx512vnni::MatMulQ5_0;
      case gguf::GgmlType::kQ4_K: return avx512vnni::MatMulQ4_K;
      case gguf::GgmlType::kQ6_K: return avx512vnni::MatMulQ6_K;
      case gguf::GgmlType::kQ4_1:
        return avx512vnni::MatMulQ4_1;
      case gguf::GgmlType::kQ5_1:
        return avx512vnni::MatMulQ5_1;
      case gguf::GgmlType::kQ2_K:
        return avx512vnni::MatMulQ2_K;
      case gguf::GgmlType::kQ3_K:
        return avx512vnni::MatMulQ3_K;
      case gguf::GgmlType::kQ5_K:
        return avx512vnni::MatMulQ5_K;
      case gguf::GgmlType::kIQ4_NL:
        return avx512vnni::MatMulIq4Nl;
      case gguf::GgmlType::kIQ4_XS:
        return avx512vnni::MatMulIq4Xs;
      default: break;
    }
    return nullptr;
  }
  // AVX2, and AVX-512 without VNNI: 8-token panels for the types whose values fit vpmaddubsw's
  // unsigned operand below 64 (all but Q8_0, IQ4_NL and IQ4_XS, whose signed values would need
  // a sign operation per token and group); the others run token by token.
  if (table.isa == Isa::kAvx2 || table.isa == Isa::kAvx512) {
    switch (type) {
      case gguf::GgmlType::kQ4_0:
        return avx2::MatMulQ4_0;
      case gguf::GgmlType::kQ5_0:
        return avx2::MatMulQ5_0;
      case gguf::GgmlType::kQ4_K:
        return avx2::MatMulQ4_K;
      case gguf::GgmlType::kQ5_K:
        return avx2::MatMulQ5_K;
      case gguf::GgmlType::kQ6_K:
        return avx2::MatMulQ6_K;
      case gguf::GgmlType::kQ4_1:
        return avx2::MatMulQ4_1;
      case gguf::GgmlType::kQ5_1:
        return avx2::MatMulQ5_1;
      case gguf::GgmlType::kQ2_K:
        return avx2::MatMulQ2_K;
      case gguf::GgmlType::kQ3_K:
        return avx2::MatMulQ3_K;
      default:
        break;
    }
  }
#endif
  (void)table;
  (void)type;
  return nullptr;  // the scalar table runs batches token by token through the twins
}

std::size_t PanelFloats(std::int64_t cols) {
  const auto nb = static_cast<std::size_t>(cols / kQK8_0);
  return nb * (128 + 16 + 32 + 16 + 16) + 5 * 16;  // q, nsum, nsum16, d, xsum, alignment
}

ActPanel BuildActPanel(const ActQ8* acts, int n, std::int64_t cols, float* storage) {
  const std::int64_t nb = cols / kQK8_0;
  const auto align = [](float* p) {
    return reinterpret_cast<float*>((reinterpret_cast<std::uintptr_t>(p) + 63) & ~std::uintptr_t{63});
  };
  auto* q = reinterpret_cast<std::int8_t*>(align(storage));
  auto* nsum = reinterpret_cast<std::int32_t*>(align(reinterpret_cast<float*>(q) + nb * 128));
  std::int32_t* nsum16 = reinterpret_cast<std::int32_t*>(align(reinterpret_cast<float*>(nsum + nb * 16)));
  float* d = align(reinterpret_cast<float*>(nsum16 + nb * 32));
  float* xsum = align(d + nb * 16);
  // Word by word (4 values of one token move together), on the calling thread before the pass:
  // byte by byte it took 2.2 % of the samples of a Q4_K_M 4096-token prefill + batch-16 decode.
  for (std::int64_t b = 0; b < nb; ++b) {
    for (int t = 0; t < kPanelTokens; ++t) {
      std::int32_t half[2] = {0, 0};
      const std::int8_t* src = t < n ? acts[t].q + b * kQK8_0 : nullptr;
      for (int k = 0; k < 8; ++k) {
        std::uint32_t word = 0;
        if (src != nullptr) std::memcpy(&word, src + 4 * k, 4);
        std::memcpy(q + (b * 8 + k) * 64 + 4 * t, &word, 4);
      }
      if (src != nullptr) {
        for (int i = 0; i < kQK8_0 / 2; ++i) half[0] += src[i];
        for (int i = kQK8_0 / 2; i < kQK8_0; ++i) half[1] += src[i];
      }
      nsum[b * 16 + t] = -(half[0] + half[1]);
      nsum16[(2 * b) * 16 + t] = -half[0];
      nsum16[(2 * b + 1) * 16 + t] = -half[1];
      d[b * 16 + t] = t < n ? acts[t].d[b] : 0.0f;
      xsum[b * 16 + t] = t < n ? acts[t].sum8[b] * 0.125f : 0.0f;
    }
  }
  return ActPanel{q, nsum, nsum16, d, xsum, n};
}

namespace scalar {

void PrepareActQ8(const float* x, std::int64_t n, std::int8_t* q, std::uint8_t* qabs,
                  std::uint32_t* qneg, float* d, float* sum8) {
  QuantizeActivationsQ8(x, n, q, d);
  for (std::int64_t b = 0; b < n / kQK8_0; ++b) {
    std::int32_t sum = 0;
    std::uint32_t neg = 0;
    for (int j = 0; j < kQK8_0; ++j) {
      const int v = q[b * kQK8_0 + j];
      sum += v;
      qabs[b * kQK8_0 + j] = static_cast<std::uint8_t>(v < 0 ? -v : v);
      neg |= static_cast<std::uint32_t>(v < 0) << j;
    }
    qneg[b] = neg;
    sum8[b] = 8.0f * d[b] * static_cast<float>(sum);
  }
}

void MatVecQ8_0Act(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x,
                   float* y, std::int64_t r0, std::int64_t r1) {
  const std::int64_t nb = cols / kQK8_0;
  for (std::int64_t r = r0; r < r1; ++r) {
    const auto* blocks = reinterpret_cast<const BlockQ8_0*>(static_cast<const std::byte*>(w) + r * row_bytes);
    float sum = 0.0f;
    for (std::int64_t b = 0; b < nb; ++b) {
      std::int32_t isum = 0;
      for (int j = 0; j < kQK8_0; ++j) isum += blocks[b].qs[j] * x.q[b * kQK8_0 + j];
      sum += (F16ToF32(blocks[b].d) * x.d[b]) * static_cast<float>(isum);
    }
    y[r] = sum;
  }
}

// Q4_0: d_w * d_x * sum((nib - 8) * q), the offset inside the integer dot.
void MatVecQ4_0Act(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x,
                   float* y, std::int64_t r0, std::int64_t r1) {
  const std::int64_t nb = cols / kQK4_0;
  for (std::int64_t r = r0; r < r1; ++r) {
    const auto* blocks = reinterpret_cast<const BlockQ4_0*>(static_cast<const std::byte*>(w) + r * row_bytes);
    float sum = 0.0f;
    for (std::int64_t b = 0; b < nb; ++b) {
      std::int32_t isum = 0;
      const std::int8_t* q = x.q + b * kQK4_0;
      for (int j = 0; j < kQK4_0 / 2; ++j) {
        isum += ((blocks[b].qs[j] & 15) - 8) * q[j] + ((blocks[b].qs[j] >> 4) - 8) * q[j + kQK4_0 / 2];
      }
      sum += (F16ToF32(blocks[b].d) * x.d[b]) * static_cast<float>(isum);
    }
    y[r] = sum;
  }
}

// Q5_0: as Q4_0 with a fifth bit (qh) and an offset of 16.
void MatVecQ5_0Act(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x,
                   float* y, std::int64_t r0, std::int64_t r1) {
  const std::int64_t nb = cols / 32;
  for (std::int64_t r = r0; r < r1; ++r) {
    const auto* blocks = reinterpret_cast<const BlockQ5_0*>(static_cast<const std::byte*>(w) + r * row_bytes);
    float sum = 0.0f;
    for (std::int64_t b = 0; b < nb; ++b) {
      std::uint32_t qh;
      std::memcpy(&qh, blocks[b].qh, 4);
      std::int32_t isum = 0;
      const std::int8_t* q = x.q + b * 32;
      for (int j = 0; j < 16; ++j) {
        const int lo = (blocks[b].qs[j] & 15) | static_cast<int>(((qh >> j) & 1) << 4);
        const int hi = (blocks[b].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
        isum += (lo - 16) * q[j] + (hi - 16) * q[j + 16];
      }
      sum += (F16ToF32(blocks[b].d) * x.d[b]) * static_cast<float>(isum);
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

void MatMulBF16Bf16(const void* w, std::size_t row_bytes, std::int64_t cols, const float* x,
                    std::int64_t n, float* y, std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  if (n < 32) return MatMulBF16(w, row_bytes, cols, x, n, y, ldy, r0, r1);  // exact, as the kernel's
  for (std::int64_t t = 0; t < n; ++t) MatVecBF16Bf16(w, row_bytes, cols, x + t * cols, y + t * ldy, r0, r1);
}

}  // namespace scalar
}  // namespace internal
}  // namespace smartgen::kernels
