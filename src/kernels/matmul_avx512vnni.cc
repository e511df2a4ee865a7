// Q8_0 x Q8_0 GEMV with AVX-512 VNNI (vpdpbusd), behind kernels::SetFastDot (matmul.h): the
// activations are quantized to Q8_0 blocks (internal::QuantizeActivationsQ8, bit for bit),
// then each 32-weight block is one integer dot scaled by d_w * d_x. Twin:
// scalar::MatVecQ8_0Int8 (fast_dot.cc). Compiled with -mavx512vnni; chosen only when the CPU
// has it (FastDotKernel).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/kernel_table.h"

namespace smartgen::kernels::internal::avx512vnni {
namespace {

constexpr int kBlock = 32;       // Q8_0 block
constexpr int kBlockBytes = 34;  // f16 scale + 32 int8
// Rows of a pass are far apart: prefetch what the pass kPrefetchRows rows later reads (as the
// f32 GEMVs do, matmul_simd-inl.h).
constexpr int kPrefetchRows = 12;

// x -> |q| (u8), the signs of q as bits, and the block scales. vpdpbusd multiplies u8 by s8,
// so the weights take the activations' signs (weights are in [-127, 127], as ggml writes them).
void Quantize(const float* x, std::int64_t nb, std::uint8_t* qabs, std::uint32_t* qneg, float* d) {
  for (std::int64_t b = 0; b < nb; ++b) {
    const __m512 x0 = _mm512_loadu_ps(x + b * kBlock), x1 = _mm512_loadu_ps(x + b * kBlock + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
    d[b] = amax / 127.0f;
    const __m512 id = _mm512_set1_ps(d[b] != 0.0f ? 1.0f / d[b] : 0.0f);
    // Round to nearest even (the default rounding mode), as std::nearbyint in the scalar copy.
    const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(x0, id));
    const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(x1, id));
    const __m256i q = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm512_cvtepi32_epi8(q0)),
                                              _mm512_cvtepi32_epi8(q1), 1);
    qneg[b] = _mm256_movemask_epi8(q);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qabs + b * kBlock), _mm256_abs_epi8(q));
  }
}

// One block pair (or a last single block, hi = false) of R rows.
template <int R, bool kPair>
inline void Step(const std::byte* w, std::size_t row_bytes, std::int64_t b, const std::uint8_t* qabs,
                 const std::uint32_t* qneg, const float* d, __m512* acc) {
  const __m512i zero = _mm512_setzero_si512();
  __m512i xq;
  __mmask64 neg;
  if constexpr (kPair) {
    xq = _mm512_loadu_si512(qabs + b * kBlock);
    neg = static_cast<__mmask64>(qneg[b]) | (static_cast<__mmask64>(qneg[b + 1]) << 32);
  } else {
    xq = _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qabs + b * kBlock)));
    neg = qneg[b];
  }
  for (int i = 0; i < R; ++i) {
    const std::byte* blk = w + i * row_bytes + b * kBlockBytes;
    __builtin_prefetch(blk + kPrefetchRows * row_bytes, 0, 0);
    if constexpr (kPair) __builtin_prefetch(blk + kPrefetchRows * row_bytes + 64, 0, 0);
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
    std::uint16_t h0, h1 = 0;
    std::memcpy(&h0, blk, 2);
    __m512i wq;
    if constexpr (kPair) {
      const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kBlockBytes + 2));
      wq = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
      std::memcpy(&h1, blk + kBlockBytes, 2);
    } else {
      wq = _mm512_zextsi256_si512(lo);
    }
    wq = _mm512_mask_sub_epi8(wq, neg, zero, wq);
    const __m512i dot = _mm512_dpbusd_epi32(zero, xq, wq);
    const float s0 = _cvtsh_ss(h0) * d[b];
    const float s1 = kPair ? _cvtsh_ss(h1) * d[b + 1] : 0.0f;
    const __m512 scale = _mm512_insertf32x8(_mm512_set1_ps(s0), _mm256_set1_ps(s1), 1);
    acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[i]);
  }
}

template <int R>
void Rows(const std::byte* w, std::size_t row_bytes, std::int64_t nb, const std::uint8_t* qabs,
          const std::uint32_t* qneg, const float* d, float* y) {
  __m512 acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
  std::int64_t b = 0;
  for (; b + 2 <= nb; b += 2) Step<R, true>(w, row_bytes, b, qabs, qneg, d, acc);
  if (b < nb) Step<R, false>(w, row_bytes, b, qabs, qneg, d, acc);
  for (int i = 0; i < R; ++i) y[i] = _mm512_reduce_add_ps(acc[i]);
}

}  // namespace

void MatVecQ8_0(const void* w, std::size_t row_bytes, std::int64_t cols, const float* x, float* y,
                std::int64_t r0, std::int64_t r1) {
  const std::int64_t nb = cols / kBlock;
  // Per-thread scratch: |q| bytes, sign bits (one word per block), block scales.
  float* scratch = ThreadScratch(4, static_cast<std::size_t>(cols / 4 + 2 * nb + 16));
  auto* qabs = reinterpret_cast<std::uint8_t*>(scratch);
  auto* qneg = reinterpret_cast<std::uint32_t*>(scratch + cols / 4);
  float* d = scratch + cols / 4 + nb;
  Quantize(x, nb, qabs, qneg, d);
  const auto* base = static_cast<const std::byte*>(w);
  std::int64_t r = r0;
  for (; r + 8 <= r1; r += 8) Rows<8>(base + r * row_bytes, row_bytes, nb, qabs, qneg, d, y + r);
  for (; r < r1; ++r) Rows<1>(base + r * row_bytes, row_bytes, nb, qabs, qneg, d, y + r);
}

}  // namespace smartgen::kernels::internal::avx512vnni
