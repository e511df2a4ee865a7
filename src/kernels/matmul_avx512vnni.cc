// Q8_0, Q4_0 and Q5_0 x Q8_0 GEMVs with AVX-512 VNNI (vpdpbusd), behind kernels::SetFastDot
// (matmul.h), on activations prepared once per pass (ActQ8, kernel_table.h; PrepareActQ8 here is
// bit for bit scalar::PrepareActQ8). Each 32-weight block is one integer dot (Q4_0/Q5_0 offsets
// included) scaled by d_w * d_x; a row goes 4 blocks at a time, whose 4 scales come from one or two
// vector loads and a word permutation instead of a scalar load and conversion each. Twins:
// scalar::MatVecQ8_0Act, MatVecQ4_0Act, MatVecQ5_0Act (fast_dot.cc). Compiled with
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
// A GEMV reads its rows one after another (one sequential stream per thread: on an AMD EPYC
// Zen 5 Qwen2.5-0.5B decoded 1.1-1.15x faster so than with 8 rows interleaved, Q4_0 1.15x; see
// matmul_simd-inl.h), prefetching what it reads kPrefetchRows rows later into every cache level.
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

// Word permutation that spreads 4 f16 words (word indices t0..t3 of a 64-byte vector, or of two
// with _mm512_permutex2var_epi16) over 8 words each, in order.
__m512i SpreadWords(int t0, int t1, int t2, int t3) {
  const auto pair = [](int t) { return t | (t << 16); };
  return _mm512_set_epi32(pair(t3), pair(t3), pair(t3), pair(t3), pair(t2), pair(t2), pair(t2), pair(t2),
                          pair(t1), pair(t1), pair(t1), pair(t1), pair(t0), pair(t0), pair(t0), pair(t0));
}

// The f16 scales of 4 consecutive blocks of kBytes each (at their first 2 bytes), without a
// scalar load each: [d0 x8, d1 x8] in *s01 and [d2 x8, d3 x8] in *s23. Reads only the 4 blocks.
template <int kBytes>
inline void GroupScales(const std::byte* blk, __m512i spread, __m512* s01, __m512* s23) {
  const __m512i a = _mm512_loadu_si512(blk);
  __m512i words;
  if constexpr (kBytes == kQ4BlockBytes) {
    words = _mm512_permutexvar_epi16(spread, a);  // d at 0, 18, 36, 54
  } else {
    // Q5_0: d at 0, 22 | 44, 66 of a second load at 24; Q8_0: 0, 34 | 68, 102 of one at 64.
    constexpr int kSecond = kBytes == kQ5BlockBytes ? 24 : 64;
    words = _mm512_permutex2var_epi16(a, spread, _mm512_loadu_si512(blk + kSecond));
  }
  *s01 = _mm512_cvtph_ps(_mm512_castsi512_si256(words));
  *s23 = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(words, 1));
}

template <int kBytes>
__m512i GroupSpread() {
  if constexpr (kBytes == kQ4BlockBytes) return SpreadWords(0, 9, 18, 27);
  if constexpr (kBytes == kQ5BlockBytes) return SpreadWords(0, 11, 32 + 10, 32 + 21);
  return SpreadWords(0, 17, 32 + 2, 32 + 19);
}

// The activation scales of blocks b..b+3 in the lane patterns of GroupScales.
inline void GroupActScales(const ActQ8& x, std::int64_t b, __m512* dx01, __m512* dx23) {
  const __m512 d = _mm512_castps128_ps512(_mm_loadu_ps(x.d + b));
  *dx01 = _mm512_permutexvar_ps(_mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0), d);
  *dx23 = _mm512_permutexvar_ps(_mm512_set_epi32(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2), d);
}

// Q8_0: vpdpbusd multiplies u8 by s8, so the weights take the activations' signs (weights are in
// [-127, 127], as ggml writes them) and |q| is the u8 operand. One block (a row's tail).
template <int R>
inline void StepQ8(const std::byte* w, std::size_t row_bytes, std::int64_t b, const ActQ8& x,
                   __m512* acc) {
  const __m512i zero = _mm512_setzero_si512();
  const __m512i xq = _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qabs + b * kBlock)));
  const __mmask64 neg = x.qneg[b];
  for (int i = 0; i < R; ++i) {
    const std::byte* blk = w + i * row_bytes + b * kQ8BlockBytes;
    __m512i wq = _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2)));
    wq = _mm512_mask_sub_epi8(wq, neg, zero, wq);
    const __m512i dot = _mm512_dpbusd_epi32(zero, xq, wq);
    acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), PairScale(HalfAt(blk) * x.d[b], 0.0f), acc[i]);
  }
}

// Q8_0, blocks b..b+3 (136 bytes) of R rows: two pair dots, the scales of all four from two loads.
template <int R>
inline void GroupQ8(const std::byte* w, std::size_t row_bytes, std::int64_t b, const ActQ8& x,
                    __m512i spread, __m512* acc) {
  const __m512i zero = _mm512_setzero_si512();
  const __m512i xq[2] = {_mm512_loadu_si512(x.qabs + b * kBlock), _mm512_loadu_si512(x.qabs + (b + 2) * kBlock)};
  __mmask64 neg[2];
  for (int p = 0; p < 2; ++p) {
    neg[p] = static_cast<__mmask64>(x.qneg[b + 2 * p]) | (static_cast<__mmask64>(x.qneg[b + 2 * p + 1]) << 32);
  }
  __m512 dx[2];
  GroupActScales(x, b, &dx[0], &dx[1]);
  for (int i = 0; i < R; ++i) {
    const std::byte* blk = w + i * row_bytes + b * kQ8BlockBytes;
    for (int off = 0; off < 4 * kQ8BlockBytes; off += 64) __builtin_prefetch(blk + kPrefetchRows * row_bytes + off, 0, 3);
    __m512 s[2];
    GroupScales<kQ8BlockBytes>(blk, spread, &s[0], &s[1]);
    __m512 a = acc[i];
    for (int p = 0; p < 2; ++p) {
      const std::byte* bp = blk + 2 * p * kQ8BlockBytes;
      const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp + 2));
      const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp + kQ8BlockBytes + 2));
      __m512i wq = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
      wq = _mm512_mask_sub_epi8(wq, neg[p], zero, wq);
      const __m512i dot = _mm512_dpbusd_epi32(zero, xq[p], wq);
      a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(s[p], dx[p]), a);
    }
    acc[i] = a;
  }
}

template <int R>
void RowsQ8(const std::byte* w, std::size_t row_bytes, std::int64_t nb, const ActQ8& x, float* y) {
  __m512 acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
  const __m512i spread = GroupSpread<kQ8BlockBytes>();
  std::int64_t b = 0;
  for (; b + 4 <= nb; b += 4) GroupQ8<R>(w, row_bytes, b, x, spread, acc);
  for (; b < nb; ++b) StepQ8<R>(w, row_bytes, b, x, acc);
  for (int i = 0; i < R; ++i) y[i] = _mm512_reduce_add_ps(acc[i]);
}

// A Q4_0 block's 32 weights as u8 nibbles in element order: the low nibbles of its 16 bytes are
// elements 0-15, the high ones 16-31.
__m256i NibblesQ4(const std::byte* blk) {
  const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
  const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(qs), _mm_srli_epi16(qs, 4), 1);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// Q4_0 (kFive false) and Q5_0: the unsigned values (0..15, 0..31) are the u8 operand and q the
// s8 one; the offset of 8 (16) per weight enters the integer dot as its initial value
// -8 (-16) * (sum of each lane's 4 activations), so a block's dot is exactly sum((v - 8) q).
template <bool kFive>
inline __m512i OffsetDot(__m512i xq) {
  const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(kFive ? 16 : 8), xq);
  return _mm512_sub_epi32(_mm512_setzero_si512(), dot);
}

// A block's 32 values (Q5_0: nibbles at blk + 6, bit e of the 32-bit qh at blk + 2 as 16 on
// element e).
template <bool kFive>
__m256i ValuesQ4(const std::byte* blk) {
  if constexpr (!kFive) return NibblesQ4(blk);
  std::uint32_t qh;
  std::memcpy(&qh, blk + 2, 4);
  return _mm256_or_si256(NibblesQ4(blk + 4), _mm256_maskz_mov_epi8(qh, _mm256_set1_epi8(16)));
}

// One block of R rows (a row's tail).
template <int R, bool kFive>
inline void StepQ4(const std::byte* w, std::size_t row_bytes, std::int64_t b, const ActQ8& x,
                   __m512* acc) {
  constexpr int kBytes = kFive ? kQ5BlockBytes : kQ4BlockBytes;
  const __m512i xq = _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + b * kBlock)));
  const __m512i offset = OffsetDot<kFive>(xq);
  for (int i = 0; i < R; ++i) {
    const std::byte* blk = w + i * row_bytes + b * kBytes;
    const __m512i dot = _mm512_dpbusd_epi32(offset, _mm512_zextsi256_si512(ValuesQ4<kFive>(blk)), xq);
    acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_set1_ps(HalfAt(blk) * x.d[b]), acc[i]);
  }
}

// Blocks b..b+3 of R rows: per pair, the 64 values in element order from two 16-byte loads
// ([qs0, qs0 >> 4, qs1, qs1 >> 4] & 15, plus Q5_0's fifth bits), one dot, one FMA.
template <int R, bool kFive>
inline void GroupQ4(const std::byte* w, std::size_t row_bytes, std::int64_t b, const ActQ8& x,
                    __m512i spread, __m512* acc) {
  constexpr int kBytes = kFive ? kQ5BlockBytes : kQ4BlockBytes;
  constexpr int kQs = kFive ? 6 : 2;  // offset of the nibbles in a block
  const __m512i low4 = _mm512_set1_epi8(0x0F), sixteen = _mm512_set1_epi8(16);
  const __m512i interleave = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
  const __m512i xq[2] = {_mm512_loadu_si512(x.q + b * kBlock), _mm512_loadu_si512(x.q + (b + 2) * kBlock)};
  const __m512i offset[2] = {OffsetDot<kFive>(xq[0]), OffsetDot<kFive>(xq[1])};
  __m512 dx[2];
  GroupActScales(x, b, &dx[0], &dx[1]);
  for (int i = 0; i < R; ++i) {
    const std::byte* blk = w + i * row_bytes + b * kBytes;
    for (int off = 0; off < 4 * kBytes; off += 64) __builtin_prefetch(blk + kPrefetchRows * row_bytes + off, 0, 3);
    __m512 s[2];
    GroupScales<kBytes>(blk, spread, &s[0], &s[1]);
    __m512 a = acc[i];
    for (int p = 0; p < 2; ++p) {
      const std::byte* bp = blk + 2 * p * kBytes;
      const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bp + kQs));
      const __m128i q1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bp + kBytes + kQs));
      const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(q0), q1, 1);
      __m512i v = _mm512_and_si512(
          _mm512_permutex2var_epi64(_mm512_castsi256_si512(both), interleave,
                                    _mm512_castsi256_si512(_mm256_srli_epi16(both, 4))),
          low4);
      if constexpr (kFive) {
        std::uint32_t h0, h1;
        std::memcpy(&h0, bp + 2, 4);
        std::memcpy(&h1, bp + kBytes + 2, 4);
        const __mmask64 high = static_cast<__mmask64>(h0) | (static_cast<__mmask64>(h1) << 32);
        v = _mm512_mask_add_epi8(v, high, v, sixteen);  // nibbles < 16: adding is or-ing
      }
      const __m512i dot = _mm512_dpbusd_epi32(offset[p], v, xq[p]);
      a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(s[p], dx[p]), a);
    }
    acc[i] = a;
  }
}

template <int R, bool kFive>
void RowsQ4(const std::byte* w, std::size_t row_bytes, std::int64_t nb, const ActQ8& x, float* y) {
  constexpr int kBytes = kFive ? kQ5BlockBytes : kQ4BlockBytes;
  __m512 acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
  const __m512i spread = GroupSpread<kBytes>();
  std::int64_t b = 0;
  for (; b + 4 <= nb; b += 4) GroupQ4<R, kFive>(w, row_bytes, b, x, spread, acc);
  for (; b < nb; ++b) StepQ4<R, kFive>(w, row_bytes, b, x, acc);
  for (int i = 0; i < R; ++i) y[i] = _mm512_reduce_add_ps(acc[i]);
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
  for (std::int64_t r = r0; r < r1; ++r) RowsQ8<1>(base + r * row_bytes, row_bytes, nb, x, y + r);
}

void MatVecQ4_0(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
                std::int64_t r0, std::int64_t r1) {
  const std::int64_t nb = cols / kBlock;
  const auto* base = static_cast<const std::byte*>(w);
  for (std::int64_t r = r0; r < r1; ++r) RowsQ4<1, false>(base + r * row_bytes, row_bytes, nb, x, y + r);
}

void MatVecQ5_0(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
                std::int64_t r0, std::int64_t r1) {
  const std::int64_t nb = cols / kBlock;
  const auto* base = static_cast<const std::byte*>(w);
  for (std::int64_t r = r0; r < r1; ++r) RowsQ4<1, true>(base + r * row_bytes, row_bytes, nb, x, y + r);
}

}  // namespace smartgen::kernels::internal::avx512vnni
