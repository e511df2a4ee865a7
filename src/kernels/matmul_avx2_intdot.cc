// Q8_0, Q4_0, Q5_0, Q4_K, Q5_K and Q6_K x Q8_0 GEMVs with AVX2 integer dots, behind
// kernels::SetFastDot (matmul.h), for CPUs without AVX-512 VNNI: the same integer dots as the
// VNNI kernels and the scalar twins (fast_dot.cc, fast_dot_k.cc), each 32 values one vpmaddubsw
// and one vpmaddwd by ones into 8 int32 lanes (avx2_intdot-inl.h), scaled per block (Q6_K: per
// half-block) in f32.
// Q8_0 and Q6_K weights take the activations' signs (vpsignb) against |q|; Q4_0 / Q5_0 add
// their offset of 8 (16) per weight as an integer, -8 (-16) * sum(q), shared by the rows.
// Compiled with -mavx2 -mfma -mf16c; chosen for the AVX2 table (FastDotActKernel).
#include <immintrin.h>

#include <cstdint>

#include "kernels/avx2_intdot-inl.h"
#include "kernels/kernel_table.h"
#include "kernels/kquant_scales-inl.h"

namespace smartgen::kernels::internal::avx2 {
namespace {

// Each row keeps two accumulators (even and odd blocks): one FMA chain would hold a row to one
// block per FMA latency, below what a core streams.
template <int R>
void RowsQ8(const std::byte* w, std::size_t row_bytes, std::int64_t nb, const ActQ8& x, float* y) {
  __m256 acc[R][2];
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  const auto step = [&](std::int64_t b, int chain) {
    const __m256i xq = Load32(x.q + 32 * b), xa = Load32(x.qabs + 32 * b);
    for (int i = 0; i < R; ++i) {
      const std::byte* blk = w + i * row_bytes + b * 34;
      __builtin_prefetch(blk + kPrefetchRows * row_bytes, 0, 3);
      const __m256i dot = Dot32(xa, _mm256_sign_epi8(Load32(blk + 2), xq));
      acc[i][chain] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(HalfAt(blk) * x.d[b]),
                                      acc[i][chain]);
    }
  };
  std::int64_t b = 0;
  for (; b + 2 <= nb; b += 2) step(b, 0), step(b + 1, 1);
  if (b < nb) step(b, 0);
  for (int i = 0; i < R; ++i) y[i] = Sum8(_mm256_add_ps(acc[i][0], acc[i][1]));
}

template <int R, bool kFive>
void RowsQ4(const std::byte* w, std::size_t row_bytes, std::int64_t nb, const ActQ8& x, float* y) {
  constexpr int kBytes = kFive ? 22 : 18;
  __m256 acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm256_setzero_ps();
  for (std::int64_t b = 0; b < nb; ++b) {
    const __m256i xq = Load32(x.q + 32 * b);
    const __m256i offset = _mm256_sub_epi32(_mm256_setzero_si256(), Dot32(_mm256_set1_epi8(kFive ? 16 : 8), xq));
    for (int i = 0; i < R; ++i) {
      const std::byte* blk = w + i * row_bytes + b * kBytes;
      __builtin_prefetch(blk + kPrefetchRows * row_bytes, 0, 3);
      __m256i v = Nibbles(blk + (kFive ? 6 : 2));
      if constexpr (kFive) {
        std::uint32_t qh;
        std::memcpy(&qh, blk + 2, 4);
        v = _mm256_or_si256(v, HighBits16(qh));
      }
      const __m256i dot = _mm256_add_epi32(Dot32(v, xq), offset);
      acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(HalfAt(blk) * x.d[b]), acc[i]);
    }
  }
  for (int i = 0; i < R; ++i) y[i] = Sum8(acc[i]);
}

template <int R>
void RowsQ4_0(const std::byte* w, std::size_t rb, std::int64_t nb, const ActQ8& x, float* y) {
  RowsQ4<R, false>(w, rb, nb, x, y);
}
template <int R>
void RowsQ5_0(const std::byte* w, std::size_t rb, std::int64_t nb, const ActQ8& x, float* y) {
  RowsQ4<R, true>(w, rb, nb, x, y);
}

// Q4_K (144-byte blocks: f16 d, dmin, 12 scale bytes, 128 nibble bytes) or, kFive, Q5_K (176:
// the fifth bits qh[32] before the nibbles; bit j of qh[l] is sub-block j's element l, added as
// 16 to the nibble). A super-block's 8 scales d sc_j d_x are one vector, each sub-block's taken
// by a lane permutation; its mins dmin m_j d_x sum(q) one product per super-block.
template <int R, bool kFive>
void RowsQ4K5K(const std::byte* w, std::size_t row_bytes, std::int64_t nsb, const ActQ8& x,
               float* y) {
  constexpr int kBytes = kFive ? 176 : 144, kQs = kFive ? 48 : 16;
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc[R][2], mins[R];  // two chains a row: low and high nibbles
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = mins[i] = _mm256_setzero_ps();
  for (std::int64_t b = 0; b < nsb; ++b) {
    const __m256 dx = _mm256_loadu_ps(x.d + 8 * b);
    const __m256 xsum = _mm256_mul_ps(_mm256_loadu_ps(x.sum8 + 8 * b), _mm256_set1_ps(0.125f));
    for (int i = 0; i < R; ++i) {
      const std::byte* blk = w + i * row_bytes + b * kBytes;
      for (int off = 0; off < kBytes; off += 64)
        __builtin_prefetch(blk + kPrefetchRows * row_bytes + off, 0, 3);
      const __m128i sm = ScalesMinsQ4K(blk + 4);
      const __m256 sc = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sm));
      const __m256 m = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(sm, 8)));
      const __m256 s = _mm256_mul_ps(_mm256_mul_ps(sc, _mm256_set1_ps(HalfAt(blk))), dx);
      mins[i] = _mm256_add_ps(
          mins[i], _mm256_mul_ps(_mm256_mul_ps(m, _mm256_set1_ps(HalfAt(blk + 2))), xsum));
      __m256i qh = _mm256_setzero_si256();
      if constexpr (kFive) qh = Load32(blk + 16);
      __m256 a[2] = {acc[i][0], acc[i][1]};
#pragma GCC unroll 4
      for (int g = 0; g < 4; ++g) {
        const __m256i qs = Load32(blk + kQs + 32 * g);
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          const int j = 2 * g + h;
          __m256i v = _mm256_and_si256(h == 0 ? qs : _mm256_srli_epi16(qs, 4), low4);
          if constexpr (kFive) v = _mm256_or_si256(v, ByteBit(qh, j, 4));
          const __m256i dot = Dot32(v, Load32(x.q + 256 * b + 32 * j));
          a[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot),
                                 _mm256_permutevar8x32_ps(s, _mm256_set1_epi32(j)), a[h]);
        }
      }
      acc[i][0] = a[0], acc[i][1] = a[1];
    }
  }
  for (int i = 0; i < R; ++i) y[i] = Sum8(_mm256_add_ps(acc[i][0], acc[i][1])) - Sum8(mins[i]);
}
template <int R>
void RowsQ4K(const std::byte* w, std::size_t rb, std::int64_t nsb, const ActQ8& x, float* y) {
  RowsQ4K5K<R, false>(w, rb, nsb, x, y);
}
template <int R>
void RowsQ5K(const std::byte* w, std::size_t rb, std::int64_t nsb, const ActQ8& x, float* y) {
  RowsQ4K5K<R, true>(w, rb, nsb, x, y);
}

template <int R>
void RowsQ6K(const std::byte* w, std::size_t row_bytes, std::int64_t nsb, const ActQ8& x, float* y) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(3), off32 = _mm256_set1_epi8(32);
  __m256 acc[R][2];  // two chains a row: even and odd quarters
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  for (std::int64_t b = 0; b < nsb; ++b) {
    for (int i = 0; i < R; ++i) {
      const std::byte* blk = w + i * row_bytes + b * 210;
      for (int off = 0; off < 210; off += 64) __builtin_prefetch(blk + kPrefetchRows * row_bytes + off, 0, 3);
      // d sc_j d_x of sub-blocks 8 n .. 8 n + 7 (sub-block j's activation block: j / 2).
      const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192));
      const __m256 d = _mm256_set1_ps(HalfAt(blk + 208));
      const __m256 dx = _mm256_loadu_ps(x.d + 8 * b);
      __m256 scale[2];
      for (int n = 0; n < 2; ++n) {
        const __m256i bytes = _mm256_cvtepi8_epi32(n == 0 ? sc : _mm_srli_si128(sc, 8));
        const __m256i pairs = _mm256_setr_epi32(4 * n, 4 * n, 4 * n + 1, 4 * n + 1, 4 * n + 2,
                                                4 * n + 2, 4 * n + 3, 4 * n + 3);
        scale[n] = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(bytes), d),
                                 _mm256_permutevar8x32_ps(dx, pairs));
      }
      __m256 a[2] = {acc[i][0], acc[i][1]};
      for (int n = 0; n < 2; ++n) {
        const __m256i ql0 = Load32(blk + 64 * n), ql1 = Load32(blk + 64 * n + 32);
        const __m256i qh = Load32(blk + 128 + 32 * n);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {  // quarter k: elements 128 n + 32 k + l
          const __m256i ql = (k & 1) ? ql1 : ql0;
          const __m256i lo = _mm256_and_si256(k >= 2 ? _mm256_srli_epi16(ql, 4) : ql, low4);
          const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), two);
          const __m256i q = _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)), off32);
          const std::int64_t e = b * 256 + 128 * n + 32 * k;
          const __m256i dot = Dot32(Load32(x.qabs + e), _mm256_sign_epi8(q, Load32(x.q + e)));
          // Lanes 0-3: sub-block 8 n + 2 k, lanes 4-7: the next one.
          const __m256i pick = _mm256_setr_epi32(2 * k, 2 * k, 2 * k, 2 * k, 2 * k + 1, 2 * k + 1,
                                                 2 * k + 1, 2 * k + 1);
          a[k & 1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot),
                                     _mm256_permutevar8x32_ps(scale[n], pick), a[k & 1]);
        }
      }
      acc[i][0] = a[0], acc[i][1] = a[1];
    }
  }
  for (int i = 0; i < R; ++i) y[i] = Sum8(_mm256_add_ps(acc[i][0], acc[i][1]));
}

}  // namespace

// Bit for bit scalar::PrepareActQ8 (fast_dot.cc): the same amax, d = amax / 127, 1 / d, products
// rounded to nearest even (cvtps_epi32 in the default rounding mode, std::nearbyint there) and
// 8 d sum(q), 32 values a block, 4 x 8 lanes.
void PrepareActQ8(const float* x, std::int64_t n, std::int8_t* q, std::uint8_t* qabs,
                  std::uint32_t* qneg, float* d, float* sum8) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (std::int64_t b = 0; b < n / 32; ++b) {
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int k = 0; k < 4; ++k) {
      v[k] = _mm256_loadu_ps(x + 32 * b + 8 * k);
      amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[k]));
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    d[b] = _mm_cvtss_f32(m) / 127.0f;
    const __m256 id = _mm256_set1_ps(d[b] != 0.0f ? 1.0f / d[b] : 0.0f);
    __m256i i[4];
    for (int k = 0; k < 4; ++k) i[k] = _mm256_cvtps_epi32(_mm256_mul_ps(v[k], id));
    const __m256i sums =
        _mm256_add_epi32(_mm256_add_epi32(i[0], i[1]), _mm256_add_epi32(i[2], i[3]));
    const __m128i s4 =
        _mm_add_epi32(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
    const __m128i s2 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
    const std::int32_t sum = _mm_cvtsi128_si32(_mm_add_epi32(s2, _mm_shuffle_epi32(s2, 1)));
    // Packing works within 128-bit halves: dwords come out as a0 b0 c0 d0 a1 b1 c1 d1.
    const __m256i packed =
        _mm256_packs_epi16(_mm256_packs_epi32(i[0], i[1]), _mm256_packs_epi32(i[2], i[3]));
    const __m256i bytes = _mm256_permutevar8x32_epi32(packed, order);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * b), bytes);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qabs + 32 * b), _mm256_abs_epi8(bytes));
    qneg[b] = static_cast<std::uint32_t>(_mm256_movemask_epi8(bytes));
    sum8[b] = 8.0f * d[b] * static_cast<float>(sum);
  }
}

// Rows per step R: one row after another where the kernel keeps up with the stream (Q8_0, Q4_K,
// Q6_K: with AVX2 only, Qwen2.5-0.5B decoded 1.2x (Q8_0) and 1.1x (Q4_K_M) faster so than 4 rows
// interleaved on an AMD EPYC Zen 5), 4 rows sharing each activation load where the nibble
// unpacking is the bottleneck (Q4_0, Q5_0: one row at a time was 5 % slower).
SMARTGEN_AVX2_INTDOT(Q8_0, RowsQ8, 32, 1)
SMARTGEN_AVX2_INTDOT(Q4_0, RowsQ4_0, 32, 4)
SMARTGEN_AVX2_INTDOT(Q5_0, RowsQ5_0, 32, 4)
SMARTGEN_AVX2_INTDOT(Q4_K, RowsQ4K, 256, 1)
SMARTGEN_AVX2_INTDOT(Q5_K, RowsQ5K, 256, 1)
SMARTGEN_AVX2_INTDOT(Q6_K, RowsQ6K, 256, 1)

}  // namespace smartgen::kernels::internal::avx2
