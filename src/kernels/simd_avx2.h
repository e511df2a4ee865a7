// The AVX2 + FMA + F16C vector vocabulary of the shared SIMD kernels (*_simd-inl.h): 8 f32
// lanes. Same names as simd_avx512.h; see there. Include only from AVX2-flagged files.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace smartgen::kernels::internal::avx2 {

struct Simd {
  using V = __m256;
  static constexpr int kLanes = 8;
  static constexpr int kGemmMr = 6;
  static constexpr int kGemmNv = 2;

  static V Zero() { return _mm256_setzero_ps(); }
  static V Set1(float x) { return _mm256_set1_ps(x); }
  static V Load(const float* p) { return _mm256_loadu_ps(p); }
  static void Store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static __m256i MaskN(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static V LoadN(const float* p, int n) { return _mm256_maskload_ps(p, MaskN(n)); }
  static void StoreN(float* p, V v, int n) { _mm256_maskstore_ps(p, MaskN(n), v); }
  static V Add(V a, V b) { return _mm256_add_ps(a, b); }
  static V Sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V Mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V Div(V a, V b) { return _mm256_div_ps(a, b); }
  static V Max(V a, V b) { return _mm256_max_ps(a, b); }
  static V Min(V a, V b) { return _mm256_min_ps(a, b); }
  static V Fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V Fnma(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }
  static float ReduceAdd(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float ReduceMax(V v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static V SwapPairs(V v) { return _mm256_permute_ps(v, 0xb1); }
  static float Lane0(V v) { return _mm256_cvtss_f32(v); }

  static V LoadF16(const std::uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  // Rounds to f16, nearest even (fp16.h's F32ToF16 for every non-NaN input).
  static void StoreF16(std::uint16_t* p, V v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  static bool AnyNan(V v) { return _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0; }
  static V LoadBf16(const std::uint16_t* p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  static V LoadI8(const std::int8_t* p) {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }

  using VI = __m256i;
  static VI WidenU8(const std::uint8_t* p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  }
  static VI AndI(VI v, int mask) { return _mm256_and_si256(v, _mm256_set1_epi32(mask)); }
  static VI OrI(VI a, VI b) { return _mm256_or_si256(a, b); }
  static VI SubI(VI v, int x) { return _mm256_sub_epi32(v, _mm256_set1_epi32(x)); }
  template <int kBits>
  static VI ShrI(VI v) {
    return _mm256_srli_epi32(v, kBits);
  }
  template <int kBits>
  static VI ShlI(VI v) {
    return _mm256_slli_epi32(v, kBits);
  }
  static V ToFloat(VI v) { return _mm256_cvtepi32_ps(v); }
  static VI ShrIVar(VI v, int bits) { return _mm256_srl_epi32(v, _mm_cvtsi32_si128(bits)); }
  // Lane i holds table[idx_i] for idx_i in [0, 16).
  static V Lut16(const float* table, VI idx) {
    const __m256 a = _mm256_permutevar8x32_ps(_mm256_loadu_ps(table), idx);
    const __m256 b = _mm256_permutevar8x32_ps(_mm256_loadu_ps(table + 8), idx);
    return _mm256_blendv_ps(a, b, _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)));  // bit 3
  }
  // Lane i holds bit (first + i) of w.
  static VI Bits(std::uint32_t w, int first) {
    const VI shift = _mm256_add_epi32(_mm256_set1_epi32(first), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(w)), shift),
                            _mm256_set1_epi32(1));
  }

  static V SelectLess(V a, V b, V x, V v) {
    return _mm256_blendv_ps(v, x, _mm256_cmp_ps(a, b, _CMP_LT_OQ));
  }
  static V Iota(float base) {
    return _mm256_add_ps(_mm256_set1_ps(base), _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7));
  }

  static V Exp(V x) {
    const V hi = _mm256_set1_ps(88.0f);  // clamp: keeps 2^round(x log2 e) normal
    const V lo = _mm256_set1_ps(-87.3365447504f);
    const V under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    const V over = _mm256_cmp_ps(x, _mm256_set1_ps(88.7228394f), _CMP_GT_OQ);
    V xc = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    V fx = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    xc = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), xc);
    xc = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), xc);
    V y = _mm256_set1_ps(1.9875691500E-4f);
    y = _mm256_fmadd_ps(y, xc, _mm256_set1_ps(1.3981999507E-3f));
    y = _mm256_fmadd_ps(y, xc, _mm256_set1_ps(8.3334519073E-3f));
    y = _mm256_fmadd_ps(y, xc, _mm256_set1_ps(4.1665795894E-2f));
    y = _mm256_fmadd_ps(y, xc, _mm256_set1_ps(1.6666665459E-1f));
    y = _mm256_fmadd_ps(y, xc, _mm256_set1_ps(5.0000001201E-1f));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(xc, xc), _mm256_add_ps(xc, _mm256_set1_ps(1.0f)));
    // 2^fx for fx in [-126, 127]: build the exponent field directly.
    const __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
    y = _mm256_mul_ps(y, _mm256_castsi256_ps(e));
    y = _mm256_andnot_ps(under, y);
    return _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()), over);
  }

  // Lane j of the result is the sum of the lanes of r[j].
  static V ReduceLanes(const V r[8]) {
    __m256 c[4], g[2];
    for (int i = 0; i < 4; ++i) {
      c[i] = _mm256_add_ps(_mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]),
                           _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]));
    }
    for (int i = 0; i < 2; ++i) {
      const __m256d a = _mm256_castps_pd(c[2 * i]), b = _mm256_castps_pd(c[2 * i + 1]);
      g[i] = _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(a, b)),
                           _mm256_castpd_ps(_mm256_unpackhi_pd(a, b)));
    }
    return _mm256_add_ps(_mm256_permute2f128_ps(g[0], g[1], 0x20),
                         _mm256_permute2f128_ps(g[0], g[1], 0x31));
  }

  static void Transpose(V r[8]) {
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee);
    const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee);
    const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee);
    const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
  }
};

}  // namespace smartgen::kernels::internal::avx2
