// The 8 six-bit scales and 8 mins of a Q4_K / Q5_K block, unpacked in SSE registers, for the
// integer-dot kernels of every ISA (matmul_avx2_intdot.cc, matmul_avx512vnni_k.cc,
// matmul_avx512vnni_batch.cc). In an unnamed namespace on purpose: each ISA file compiles its
// own copy with its own -m flags, so the linker can never hand an AVX2 caller the AVX-512 build.
// Needs AVX2 (vpsrlvd); include only from files compiled with at least -mavx2.
#pragma once

#include <immintrin.h>

#include <cstddef>

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

}  // namespace
}  // namespace smartgen::kernels::internal
