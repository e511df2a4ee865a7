// The AVX-512 vector vocabulary of the shared SIMD kernels (*_simd-inl.h): 16 f32 lanes.
// Include only from translation units compiled with the AVX-512 flags (kernels CMakeLists).
// Everything lives in the avx512 namespace, so no inline function here can be merged with a
// same-named one built for another ISA. simd_avx2.h offers the same names for 8 lanes.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace smartgen::kernels::internal::avx512 {

struct Simd {
  using V = __m512;
  static constexpr int kLanes = 16;
  // GEMM micro-kernel: kGemmMr tokens x kGemmNv vectors of output rows in registers.
  static constexpr int kGemmMr = 12;
  static constexpr int kGemmNv = 2;

  static V Zero() { return _mm512_setzero_ps(); }
  static V Set1(float x) { return _mm512_set1_ps(x); }
  static V Load(const float* p) { return _mm512_loadu_ps(p); }
  static void Store(float* p, V v) { _mm512_storeu_ps(p, v); }
  // First n (0..kLanes) lanes; the rest read as 0 / are not written.
  static V LoadN(const float* p, int n) {
    return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), p);
  }
  static void StoreN(float* p, V v, int n) {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1), v);
  }
  static V Add(V a, V b) { return _mm512_add_ps(a, b); }
  static V Sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V Mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V Div(V a, V b) { return _mm512_div_ps(a, b); }
  static V Max(V a, V b) { return _mm512_max_ps(a, b); }
  static V Min(V a, V b) { return _mm512_min_ps(a, b); }
  static V Fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }    // a * b + c
  static V Fnma(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a * b
  static float ReduceAdd(V v) { return _mm512_reduce_add_ps(v); }
  static float ReduceMax(V v) { return _mm512_reduce_max_ps(v); }
  // Swaps adjacent lanes (0<->1, 2<->3, ...).
  static V SwapPairs(V v) { return _mm512_permute_ps(v, 0xb1); }
  static float Lane0(V v) { return _mm512_cvtss_f32(v); }

  // Element conversions from storage types (kLanes elements).
  static V LoadF16(const std::uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  // Rounds to f16, nearest even (fp16.h's F32ToF16 for every non-NaN input).
  static void StoreF16(std::uint16_t* p, V v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  static bool AnyNan(V v) { return _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) != 0; }
  static V LoadBf16(const std::uint16_t* p) {
    const __m512i w =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
  static V LoadI8(const std::int8_t* p) {
    return _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }

  // Integer lanes for unpacking quantized weights (Q4_0, Q4_K, Q6_K).
  using VI = __m512i;
  // kLanes bytes, zero-extended to 32-bit lanes.
  static VI WidenU8(const std::uint8_t* p) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static VI AndI(VI v, int mask) { return _mm512_and_si512(v, _mm512_set1_epi32(mask)); }
  static VI OrI(VI a, VI b) { return _mm512_or_si512(a, b); }
  static VI SubI(VI v, int x) { return _mm512_sub_epi32(v, _mm512_set1_epi32(x)); }
  template <int kBits>
  static VI ShrI(VI v) {
    return _mm512_srli_epi32(v, kBits);
  }
  template <int kBits>
  static VI ShlI(VI v) {
    return _mm512_slli_epi32(v, kBits);
  }
  static V ToFloat(VI v) { return _mm512_cvtepi32_ps(v); }
  // v >> bits (bits not a constant).
  static VI ShrIVar(VI v, int bits) { return _mm512_srl_epi32(v, _mm_cvtsi32_si128(bits)); }
  // Lane i holds table[idx_i] for idx_i in [0, 16).
  static V Lut16(const float* table, VI idx) {
    return _mm512_permutexvar_ps(idx, _mm512_loadu_ps(table));
  }
  // Lane i holds bit (first + i) of w.
  static VI Bits(std::uint32_t w, int first) {
    const VI shift = _mm512_add_epi32(
        _mm512_set1_epi32(first),
        _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0));
    return _mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32(static_cast<int>(w)), shift),
                            _mm512_set1_epi32(1));
  }

  // Lanes where a < b get `x`, others keep `v`.
  static V SelectLess(V a, V b, V x, V v) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), v, x);
  }
  // Lane i holds float(base + i).
  static V Iota(float base) {
    return _mm512_add_ps(_mm512_set1_ps(base),
                         _mm512_set_ps(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0));
  }

  // e^x to about 2 ulp (Cephes polynomial) for x <= 88; exactly 0 below ln(FLT_MIN), e^88
  // for 88 < x <= ln(FLT_MAX), +inf above (callers use it for x <= 0 and for sigmoids).
  static V Exp(V x) {
    const V hi = _mm512_set1_ps(88.0f);  // clamp: keeps 2^round(x log2 e) normal
    const V lo = _mm512_set1_ps(-87.3365447504f);
    const __mmask16 under = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
    const __mmask16 over = _mm512_cmp_ps_mask(x, _mm512_set1_ps(88.7228394f), _CMP_GT_OQ);
    V xc = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
    V fx = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    xc = _mm512_fnmadd_ps(fx, _mm512_set1_ps(0.693359375f), xc);
    xc = _mm512_fnmadd_ps(fx, _mm512_set1_ps(-2.12194440e-4f), xc);
    V y = _mm512_set1_ps(1.9875691500E-4f);
    y = _mm512_fmadd_ps(y, xc, _mm512_set1_ps(1.3981999507E-3f));
    y = _mm512_fmadd_ps(y, xc, _mm512_set1_ps(8.3334519073E-3f));
    y = _mm512_fmadd_ps(y, xc, _mm512_set1_ps(4.1665795894E-2f));
    y = _mm512_fmadd_ps(y, xc, _mm512_set1_ps(1.6666665459E-1f));
    y = _mm512_fmadd_ps(y, xc, _mm512_set1_ps(5.0000001201E-1f));
    y = _mm512_fmadd_ps(y, _mm512_mul_ps(xc, xc), _mm512_add_ps(xc, _mm512_set1_ps(1.0f)));
    y = _mm512_scalef_ps(y, fx);  // y * 2^fx
    y = _mm512_mask_blend_ps(under, y, _mm512_setzero_ps());
    return _mm512_mask_blend_ps(over, y, _mm512_set1_ps(__builtin_inff()));
  }

  // Lane j of the result is the sum of the lanes of r[j] (a horizontal sum of 16 vectors at
  // once: 45 shuffles and adds instead of 16 separate reductions).
  static V ReduceLanes(const V r[16]) {
    __m512 c[8], g[4], h[2];
    for (int i = 0; i < 8; ++i) {
      c[i] = _mm512_add_ps(_mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]),
                           _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]));
    }
    for (int i = 0; i < 4; ++i) {
      const __m512d a = _mm512_castps_pd(c[2 * i]), b = _mm512_castps_pd(c[2 * i + 1]);
      g[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)),
                           _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
    }
    for (int i = 0; i < 2; ++i) {
      h[i] = _mm512_add_ps(_mm512_shuffle_f32x4(g[2 * i], g[2 * i + 1], 0x88),
                           _mm512_shuffle_f32x4(g[2 * i], g[2 * i + 1], 0xdd));
    }
    return _mm512_add_ps(_mm512_shuffle_f32x4(h[0], h[1], 0x88),
                         _mm512_shuffle_f32x4(h[0], h[1], 0xdd));
  }

  // Transposes a kLanes x kLanes block held in r[0..kLanes) in place.
  static void Transpose(V r[16]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
      r[i] =
          _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
      r[i + 1] =
          _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
      r[i + 2] = _mm512_castpd_ps(
          _mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
      r[i + 3] = _mm512_castpd_ps(
          _mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    }
    // Now r[4a + b] holds, in each 128-bit lane L, row (4a + 0..3) column (4L + b)... combine
    // 128-bit lanes across groups of four registers.
    for (int i = 0; i < 4; ++i) {
      t[i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0x88);      // lanes 0,2 of a | 0,2 of b
      t[4 + i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0xdd);  // lanes 1,3 of a | 1,3 of b
      t[8 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0x88);
      t[12 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0xdd);
    }
    for (int i = 0; i < 4; ++i) {
      r[i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0x88);
      r[8 + i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0xdd);
      r[4 + i] = _mm512_shuffle_f32x4(t[4 + i], t[12 + i], 0x88);
      r[12 + i] = _mm512_shuffle_f32x4(t[4 + i], t[12 + i], 0xdd);
    }
  }
};

}  // namespace smartgen::kernels::internal::avx512
