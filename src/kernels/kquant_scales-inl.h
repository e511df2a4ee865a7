// The six-bit scales of K-quant blocks unpacked in SSE registers, for the integer-dot kernels of
// every ISA: Q4_K / Q5_K's 8 scales and 8 mins (matmul_avx2_intdot.cc, matmul_avx512vnni_k.cc,
// matmul_avx512vnni_batch.cc) and Q3_K's 16 scales (matmul_avx2_intdot_more.cc,
// matmul_avx512vnni_k23.cc). In an unnamed namespace on purpose: each ISA file compiles its
// own copy with its own -m flags, so the linker can never hand an AVX2 caller the AVX-512 build.
// Needs AVX2 (vpsrlvd); include only from files compiled with at least -mavx2.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace smartgen::kernels::internal {
namespace {  // NOLINT(google-build-namespaces): one copy per ISA translation unit, see above

// The block's scales at p (12 bytes; 16 are read) as bytes [sc0..sc7, m0..m7]: quant.h's
// Q4KScaleMin for all j at once, one 32-bit word per four fields.
inline __m128i ScalesMinsQ4K(const std::byte* p) {
  const __m128i u = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  constexpr int k6 = 0x3f3f3f3f, k4 = 0x0f0f0f0f, k2 = 0x03030303;
  // [w0 & k6, w2 & k4, w1 & k6, (w2 >> 4) & k4] | [0, ((w0 >> 6) & k2) << 4, 0, ((w1 >> 6) & k2) <<
  // 4]
  __m128i a = _mm_shuffle_epi32(u, _MM_SHUFFLE(2, 1, 2, 0));
  a = _mm_and_si128(_mm_srlv_epi32(a, _mm_setr_epi32(0, 0, 0, 4)), _mm_setr_epi32(k6, k4, k6, k4));
  __m128i b = _mm_shuffle_epi32(u, _MM_SHUFFLE(1, 1, 0, 0));
  b = _mm_slli_epi32(_mm_and_si128(_mm_srli_epi32(b, 6), _mm_setr_epi32(0, k2, 0, k2)), 4);
  return _mm_or_si128(a, b);
}

// The 16 six-bit Q3_K scales minus 32 as bytes (quant_more.h's Q3KScale for every k at once) from
// the block's 12 scale bytes s at p (only those 12 are read): the low 4 bits of k are s[k % 8]'s
// low (k < 8) or high nibble, the high 2 bits are bits 2 (k / 4) of s[8 + k % 4].
inline __m128i Q3Scales(const std::byte* p) {
  std::int32_t top4;
  std::memcpy(&top4, p + 8, 4);
  const __m128i s = _mm_insert_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), top4, 2);
  const __m128i low4 = _mm_set1_epi8(0x0F);
  const __m128i nib =
      _mm_shuffle_epi8(s, _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7));
  const __m128i low =
      _mm_blend_epi16(_mm_and_si128(nib, low4), _mm_and_si128(_mm_srli_epi16(nib, 4), low4), 0xF0);
  const __m128i top =
      _mm_shuffle_epi8(s, _mm_setr_epi8(8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11));
  const __m128i high =
      _mm_and_si128(_mm_srlv_epi32(top, _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3));
  return _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi16(high, 4)), _mm_set1_epi8(32));
}

}  // namespace
}  // namespace smartgen::kernels::internal
