// Q8_0, Q4_0 and Q5_0 x Q8_0 GEMVs with AVX-512 VNNI (vpdpbusd), behind kernels::SetFastDot
// (matmul.h), on activations prepared once per pass (ActQ8, kernel_table.h; PrepareActQ8 here is
// bit for bit scalar::PrepareActQ8). Each 32-weight block is one integer dot scaled by
// d_w * d_x. Twins: scalar::MatVecQ8_0Act, MatVecQ4_0Act, MatVecQ5_0Act (fast_dot.cc). Compiled with
// -mavx512vnni; chosen only when the CPU has it (FastDotActKernel).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/kernel_table.h"

namespace smartgen::kernels::internal::avx512vnni {
namespace {

constexpr int kBlock = 32;          // Q8_0 / Q4_0 block
constexpr int kQ8BlockBytes = 34;   // f16 scale + 32 int8
constexpr int kQ4BlockBytes = 18;   // f16 scale + 16 bytes of nibbles
constexpr int kQ5BlockBytes = 22;   // f16 scale + 32 high bits + 16 bytes of nibbles
// Rows of a pass are far apart: prefetch what the pass kPrefetchRows rows later reads (as the
// f32 GEMVs do, matmul_simd-inl.h), into every cache level.
constexpr int kPrefetchRows = 12;

float HalfAt(const std::byte* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// The scales of a block pair (or of one block, s1 = 0) for the 16 int32 lanes of a pair's dot.
__m512 PairScale(float s0, float s1) {
  return _mm512_insertf32x8(_mm512_set1_ps(s0), _mm256_set1_ps(s1), 1);
}

// Q8_0: vpdpbusd multiplies u8 by s8, so the weights take the activations' signs (weights are in
// [-127, 127], as ggml writes them) and |q| is the u8 operand.
template <int R, bool kPair>
inline void StepQ8(const std::byte* w, std::size_t row_bytes, std::int64_t b, const ActQ8& x,
                   __m512* acc) {
  const __m512i zero = _mm512_setzero_si512();
  __m512i xq;
  __mmask64 neg;
  if constexpr (kPair) {
    xq = _mm512_loadu_si512(x.qabs + b * kBlock);
    neg = static_cast<__mmask64>(x.qneg[b]) | (static_cast<__mmask64>(x.qneg[b + 1]) << 32);
  } else {
    xq = _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qabs + b * kBlock)));
    neg = x.qneg[b];
  }
  for (int i = 0; i < R; ++i) {
    const std::byte* blk = w + i * row_bytes + b * kQ8BlockBytes;
    __builtin_prefetch(blk + kPrefetchRows * row_bytes, 0, 3);
    if constexpr (kPair) __builtin_prefetch(blk + kPrefetchRows * row_bytes + 64, 0, 3);
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
    __m512i wq;
    float s1 = 0.0f;
    if constexpr (kPair) {
      const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kQ8BlockBytes + 2));
      wq = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
      s1 = HalfAt(blk + kQ8BlockBytes) * x.d[b + 1];
    } else {
      wq = _mm512_zextsi256_si512(lo);
    }
    wq = _mm512_mask_sub_epi8(wq, neg, zero, wq);
    const __m512i dot = _mm512_dpbusd_epi32(zero, xq, wq);
    acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), PairScale(HalfAt(blk) * x.d[b], s1), acc[i]);
  }
}

template <int R>
void RowsQ8(const std::byte* w, std::size_t row_bytes, std::int64_t nb, const ActQ8& x, float* y) {
  __m512 acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
  std::int64_t b = 0;
  for (; b + 2 <= nb; b += 2) StepQ8<R, true>(w, row_bytes, b, x, acc);
  if (b < nb) StepQ8<R, false>(w, row_bytes, b, x, acc);
  for (int i = 0; i < R; ++i) y[i] = _mm512_reduce_add_ps(acc[i]);
}

// A Q4_0 block's 32 weights as u8 nibbles in element order: the low nibbles of its 16 bytes are
// elements 0-15, the high ones 16-31.
__m256i NibblesQ4(const std::byte* blk) {
  const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
  const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(qs), _mm_srli_epi16(qs, 4), 1);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// A Q5_0 block's 32 weights as u8 in element order: nibbles at qs (blk + 6) as Q4_0's, bit e of
// the 32-bit qh (blk + 2) as 16 on element e.
__m256i ValuesQ5(const std::byte* blk) {
  std::uint32_t qh;
  std::memcpy(&qh, blk + 2, 4);
  return _mm256_or_si256(NibblesQ4(blk + 4), _mm256_maskz_mov_epi8(qh, _mm256_set1_epi8(16)));
}

// Q4_0 (kFive false) and Q5_0: the unsigned values (0..15, 0..31) are the u8 operand and q the
// s8 one; the offset of 8 (16) per weight is d_w * sum8 (2 d_w sum8) per block, summed apart.
template <int R, bool kPair, bool kFive>
inline void StepQ4(const std::byte* w, std::size_t row_bytes, std::int64_t b, const ActQ8& x,
                   __m512* acc, float* offset) {
  constexpr int kBytes = kFive ? kQ5BlockBytes : kQ4BlockBytes;
  const auto values = [](const std::byte* blk) { return kFive ? ValuesQ5(blk) : NibblesQ4(blk); };
  const __m512i zero = _mm512_setzero_si512();
  const __m512i xq =
      kPair ? _mm512_loadu_si512(x.q + b * kBlock)
            : _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + b * kBlock)));
  for (int i = 0; i < R; ++i) {
    const std::byte* blk = w + i * row_bytes + b * kBytes;
    __builtin_prefetch(blk + kPrefetchRows * row_bytes, 0, 3);
    const float d0 = HalfAt(blk);
    __m512i wq;
    float s1 = 0.0f;
    // d_w * sum8, or twice that for Q5_0's offset of 16 (exact: a power of two).
    const float o0 = kFive ? 2.0f * d0 : d0;
    if constexpr (kPair) {
      const float d1 = HalfAt(blk + kBytes);
      wq = _mm512_inserti64x4(_mm512_castsi256_si512(values(blk)), values(blk + kBytes), 1);
      s1 = d1 * x.d[b + 1];
      offset[i] += o0 * x.sum8[b] + (kFive ? 2.0f * d1 : d1) * x.sum8[b + 1];
    } else {
      wq = _mm512_zextsi256_si512(values(blk));
      offset[i] += o0 * x.sum8[b];
    }
    const __m512i dot = _mm512_dpbusd_epi32(zero, wq, xq);
    acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), PairScale(d0 * x.d[b], s1), acc[i]);
  }
}

template <int R, bool kFive>
void RowsQ4(const std::byte* w, std::size_t row_bytes, std::int64_t nb, const ActQ8& x, float* y) {
  __m512 acc[R];
  float offset[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps(), offset[i] = 0.0f;
  std::int64_t b = 0;
  for (; b + 2 <= nb; b += 2) StepQ4<R, true, kFive>(w, row_bytes, b, x, acc, offset);
  if (b < nb) StepQ4<R, false, kFive>(w, row_bytes, b, x, acc, offset);
  for (int i = 0; i < R; ++i) y[i] = _mm512_reduce_add_ps(acc[i]) - offset[i];
}

}  // namespace

void PrepareActQ8(const float* x, std::int64_t n, std::int8_t* q, std::uint8_t* qabs,
                  std::uint32_t* qneg, float* d, float* sum8) {
  for (std::int64_t b = 0; b < n / kBlock; ++b) {
    const __m512 x0 = _mm512_loadu_ps(x + b * kBlock), x1 = _mm512_loadu_ps(x + b * kBlock + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
    d[b] = amax / 127.0f;
    const __m512 id = _mm512_set1_ps(d[b] != 0.0f ? 1.0f / d[b] : 0.0f);
    // Round to nearest even (the default rounding mode), as std::nearbyint in the scalar copy.
    const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(x0, id));
    const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(x1, id));
    const std::int32_t sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm512_cvtepi32_epi8(q0)),
                                              _mm512_cvtepi32_epi8(q1), 1);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kBlock), v);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qabs + b * kBlock), _mm256_abs_epi8(v));
    qneg[b] = static_cast<std::uint32_t>(_mm256_movemask_epi8(v));
    sum8[b] = 8.0f * d[b] * static_cast<float>(sum);
  }
}

void MatVecQ8_0(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
                std::int64_t r0, std::int64_t r1) {
  const std::int64_t nb = cols / kBlock;
  const auto* base = static_cast<const std::byte*>(w);
  std::int64_t r = r0;
  for (; r + 8 <= r1; r += 8) RowsQ8<8>(base + r * row_bytes, row_bytes, nb, x, y + r);
  for (; r < r1; ++r) RowsQ8<1>(base + r * row_bytes, row_bytes, nb, x, y + r);
}

void MatVecQ4_0(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
                std::int64_t r0, std::int64_t r1) {
  const std::int64_t nb = cols / kBlock;
  const auto* base = static_cast<const std::byte*>(w);
  std::int64_t r = r0;
  for (; r + 8 <= r1; r += 8) RowsQ4<8, false>(base + r * row_bytes, row_bytes, nb, x, y + r);
  for (; r < r1; ++r) RowsQ4<1, false>(base + r * row_bytes, row_bytes, nb, x, y + r);
}

void MatVecQ5_0(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
                std::int64_t r0, std::int64_t r1) {
  const std::int64_t nb = cols / kBlock;
  const auto* base = static_cast<const std::byte*>(w);
  std::int64_t r = r0;
  for (; r + 8 <= r1; r += 8) RowsQ4<8, true>(base + r * row_bytes, row_bytes, nb, x, y + r);
  for (; r < r1; ++r) RowsQ4<1, true>(base + r * row_bytes, row_bytes, nb, x, y + r);
}

}  // namespace smartgen::kernels::internal::avx512vnni
