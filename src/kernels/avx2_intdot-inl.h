// The pieces every AVX2 integer-dot GEMV shares (Q8_0-Q6_K: matmul_avx2_intdot.cc; Q4_1, Q5_1,
// IQ4_NL, IQ4_XS, Q2_K, Q3_K: matmul_avx2_intdot_more.cc): 32 values dotted in one vpmaddubsw
// (u8 x s8 -> pairs of s16) and one vpmaddwd by ones into 8 int32 lanes (lane i: bytes 4i..4i+3),
// nibble and fifth-bit unpacking, and the loop over a pass's rows. No pair can saturate: each
// kernel's u8 operand is at most 31 against |q| <= 127, or |q| itself against a signed byte of at
// most 127. Include only from files compiled with -mavx2 -mfma -mf16c.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace smartgen::kernels::internal::avx2 {

inline constexpr int kPrefetchRows = 12;  // how far ahead a row's bytes are prefetched

inline float HalfAt(const std::byte* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// 8 int32 lanes of sum(u * s) over 32 byte pairs (lane i: bytes 4i..4i+3).
inline __m256i Dot32(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

inline __m256i Load32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// A block's 16 nibble bytes as 32 values in element order (low nibbles, then high ones).
inline __m256i Nibbles(const std::byte* qs) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(q), _mm_srli_epi16(q, 4), 1);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// Bit e of `bits` as 16 on byte e (Q5_0's and Q5_1's fifth bits).
inline __m256i HighBits16(std::uint32_t bits) {
  const __m256i b = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(bits)),
      _mm256_setr_epi64x(0, 0x0101010101010101LL, 0x0202020202020202LL, 0x0303030303030303LL));
  const __m256i mask = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(b, mask), mask), _mm256_set1_epi8(16));
}

// Bit `bit` (0-7) of every byte of v, moved to bit `to` (0-7) of the same byte; the rest zero.
// The 16-bit shifts move bits within a byte only as far as the mask keeps them.
inline __m256i ByteBit(__m256i v, int bit, int to) {
  const __m256i moved = bit >= to ? _mm256_srli_epi16(v, bit - to) : _mm256_slli_epi16(v, to - bit);
  return _mm256_and_si256(moved, _mm256_set1_epi8(static_cast<char>(1 << to)));
}

inline float Sum8(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

// Rows r0..r1 of a pass, R at a time (rows_r) and the rest one by one (rows_1).
template <int R, typename Rows1, typename RowsR>
void ForRows(const void* w, std::size_t row_bytes, std::int64_t r0, std::int64_t r1, RowsR rows_r,
             Rows1 rows_1) {
  const auto* base = static_cast<const std::byte*>(w);
  std::int64_t r = r0;
  for (; r + R <= r1; r += R) rows_r(base + r * row_bytes, r);
  for (; r < r1; ++r) rows_1(base + r * row_bytes, r);
}

}  // namespace smartgen::kernels::internal::avx2

// A GEMV on prepared activations from Rows<R>(row, row_bytes, blocks, x, y) over `per`-value
// blocks, R rows sharing each activation load.
#define SMARTGEN_AVX2_INTDOT(Name, Rows, per, R)                                                  \
  void MatVec##Name##Act(const void* w, std::size_t rb, std::int64_t cols, const ActQ8& x,        \
                         float* y, std::int64_t r0, std::int64_t r1) {                            \
    const std::int64_t nb = cols / (per);                                                         \
    ForRows<R>(                                                                                   \
        w, rb, r0, r1, [&](const std::byte* p, std::int64_t r) { Rows<R>(p, rb, nb, x, y + r); }, \
        [&](const std::byte* p, std::int64_t r) { Rows<1>(p, rb, nb, x, y + r); });               \
  }
