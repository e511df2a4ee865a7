// Q8_0, Q4_0, Q5_0, Q4_K and Q6_K x Q8_0 GEMVs with AVX2 integer dots, behind
// kernels::SetFastDot (matmul.h), for CPUs without AVX-512 VNNI: the same integer dots as the
// VNNI kernels and the scalar twins (fast_dot.cc, fast_dot_k.cc), each 32 values one vpmaddubsw
// (u8 x s8 -> pairs of s16; no pair can saturate: |u| * |s| * 2 <= 255 * 63 * 2 or 127 * 127 * 2)
// and one vpmaddwd by ones into 8 int32 lanes, scaled per block (Q6_K: per half-block) in f32.
// Q8_0 and Q6_K weights take the activations' signs (vpsignb) against |q|; Q4_0 / Q5_0 add
// their offset of 8 (16) per weight as an integer, -8 (-16) * sum(q), shared by the rows.
// Compiled with -mavx2 -mfma -mf16c; chosen for the AVX2 table (FastDotActKernel).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/kernel_table.h"

namespace smartgen::kernels::internal::avx2 {
namespace {

constexpr int kPrefetchRows = 12;  // as the other GEMVs

float HalfAt(const std::byte* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// 8 int32 lanes of sum(u * s) over 32 byte pairs (lane i: bytes 4i..4i+3).
__m256i Dot32(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

__m256i Load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// A block's 16 nibble bytes as 32 values in element order (low nibbles, then high ones).
__m256i Nibbles(const std::byte* qs) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(q), _mm_srli_epi16(q, 4), 1);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// Bit e of `bits` as 16 on byte e (Q5_0's fifth bits).
__m256i HighBits16(std::uint32_t bits) {
  const __m256i b = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                                        _mm256_setr_epi64x(0, 0x0101010101010101LL, 0x0202020202020202LL,
                                                           0x0303030303030303LL));
  const __m256i mask = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(b, mask), mask), _mm256_set1_epi8(16));
}

float Sum8(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

template <int R>
void RowsQ8(const std::byte* w, std::size_t row_bytes, std::int64_t nb, const ActQ8& x, float* y) {
  __m256 acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm256_setzero_ps();
  for (std::int64_t b = 0; b < nb; ++b) {
    const __m256i xq = Load32(x.q + 32 * b), xa = Load32(x.qabs + 32 * b);
    for (int i = 0; i < R; ++i) {
      const std::byte* blk = w + i * row_bytes + b * 34;
      __builtin_prefetch(blk + kPrefetchRows * row_bytes, 0, 3);
      const __m256i dot = Dot32(xa, _mm256_sign_epi8(Load32(blk + 2), xq));
      acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(HalfAt(blk) * x.d[b]), acc[i]);
    }
  }
  for (int i = 0; i < R; ++i) y[i] = Sum8(acc[i]);
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

// The 6-bit scales and mins of a Q4_K block (quant.h's Q4KScaleMin; ISA files share no inline
// functions).
void ScaleMinQ4K(int j, const std::uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

template <int R>
void RowsQ4K(const std::byte* w, std::size_t row_bytes, std::int64_t nsb, const ActQ8& x, float* y) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc[R];
  float mins[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm256_setzero_ps(), mins[i] = 0.0f;
  for (std::int64_t b = 0; b < nsb; ++b) {
    for (int i = 0; i < R; ++i) {
      const std::byte* blk = w + i * row_bytes + b * 144;
      for (int off = 0; off < 144; off += 64) __builtin_prefetch(blk + kPrefetchRows * row_bytes + off, 0, 3);
      const float d = HalfAt(blk), dmin = HalfAt(blk + 2);
      const auto* scales = reinterpret_cast<const std::uint8_t*>(blk + 4);
      __m256 a = acc[i];
      for (int g = 0; g < 4; ++g) {
        const __m256i qs = Load32(blk + 16 + 32 * g);
        for (int h = 0; h < 2; ++h) {
          const int j = 2 * g + h;
          const std::int64_t ab = 8 * b + j;  // activation block
          int sc, m;
          ScaleMinQ4K(j, scales, &sc, &m);
          const __m256i v = _mm256_and_si256(h == 0 ? qs : _mm256_srli_epi16(qs, 4), low4);
          const __m256i dot = Dot32(v, Load32(x.q + 32 * ab));
          a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(static_cast<float>(sc) * d * x.d[ab]), a);
          mins[i] += (static_cast<float>(m) * dmin) * (x.sum8[ab] * 0.125f);
        }
      }
      acc[i] = a;
    }
  }
  for (int i = 0; i < R; ++i) y[i] = Sum8(acc[i]) - mins[i];
}

template <int R>
void RowsQ6K(const std::byte* w, std::size_t row_bytes, std::int64_t nsb, const ActQ8& x, float* y) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(3), off32 = _mm256_set1_epi8(32);
  __m256 acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm256_setzero_ps();
  for (std::int64_t b = 0; b < nsb; ++b) {
    for (int i = 0; i < R; ++i) {
      const std::byte* blk = w + i * row_bytes + b * 210;
      for (int off = 0; off < 210; off += 64) __builtin_prefetch(blk + kPrefetchRows * row_bytes + off, 0, 3);
      const float d = HalfAt(blk + 208);
      const auto* sc = reinterpret_cast<const std::int8_t*>(blk + 192);
      __m256 a = acc[i];
      for (int n = 0; n < 2; ++n) {
        const __m256i ql0 = Load32(blk + 64 * n), ql1 = Load32(blk + 64 * n + 32);
        const __m256i qh = Load32(blk + 128 + 32 * n);
        for (int k = 0; k < 4; ++k) {  // quarter k: elements 128 n + 32 k + l
          const __m256i ql = (k & 1) ? ql1 : ql0;
          const __m256i lo = _mm256_and_si256(k >= 2 ? _mm256_srli_epi16(ql, 4) : ql, low4);
          const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), two);
          const __m256i q = _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)), off32);
          const std::int64_t e = b * 256 + 128 * n + 32 * k;
          const __m256i dot = Dot32(Load32(x.qabs + e), _mm256_sign_epi8(q, Load32(x.q + e)));
          const float dx = x.d[e / 32];
          const int j = 8 * n + 2 * k;  // the half-blocks' scales: j (lanes 0-3), j + 1 (lanes 4-7)
          const __m256 s = _mm256_set_m128(_mm_set1_ps(static_cast<float>(sc[j + 1]) * d * dx),
                                           _mm_set1_ps(static_cast<float>(sc[j]) * d * dx));
          a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), s, a);
        }
      }
      acc[i] = a;
    }
  }
  for (int i = 0; i < R; ++i) y[i] = Sum8(acc[i]);
}

template <int R, typename Rows1, typename RowsR>
void ForRows(const void* w, std::size_t row_bytes, std::int64_t r0, std::int64_t r1, RowsR rows_r, Rows1 rows_1) {
  const auto* base = static_cast<const std::byte*>(w);
  std::int64_t r = r0;
  for (; r + R <= r1; r += R) rows_r(base + r * row_bytes, r);
  for (; r < r1; ++r) rows_1(base + r * row_bytes, r);
}

}  // namespace

// Rows per step R: one row after another where the kernel keeps up with the stream (Q8_0, Q4_K,
// Q6_K: with AVX2 only, Qwen2.5-0.5B decoded 1.2x (Q8_0) and 1.1x (Q4_K_M) faster so than 4 rows
// interleaved on an AMD EPYC Zen 5), 4 rows sharing each activation load where the nibble
// unpacking is the bottleneck (Q4_0, Q5_0: one row at a time was 5 % slower).
#define SMARTGEN_AVX2_INTDOT(Name, Rows, per, R)                                                    \
  void MatVec##Name##Act(const void* w, std::size_t rb, std::int64_t cols, const ActQ8& x, float* y, \
                         std::int64_t r0, std::int64_t r1) {                                         \
    const std::int64_t nb = cols / (per);                                                           \
    ForRows<R>(                                                                                      \
        w, rb, r0, r1, [&](const std::byte* p, std::int64_t r) { Rows<R>(p, rb, nb, x, y + r); },   \
        [&](const std::byte* p, std::int64_t r) { Rows<1>(p, rb, nb, x, y + r); });                  \
  }
SMARTGEN_AVX2_INTDOT(Q8_0, RowsQ8, 32, 1)
SMARTGEN_AVX2_INTDOT(Q4_0, RowsQ4_0, 32, 4)
SMARTGEN_AVX2_INTDOT(Q5_0, RowsQ5_0, 32, 4)
SMARTGEN_AVX2_INTDOT(Q4_K, RowsQ4K, 256, 1)
SMARTGEN_AVX2_INTDOT(Q6_K, RowsQ6K, 256, 1)
#undef SMARTGEN_AVX2_INTDOT

}  // namespace smartgen::kernels::internal::avx2
