// Q4_1 and Q5_1 x Q8_0 GEMVs with AVX-512 VNNI (vpdpbusd), behind kernels::SetFastDot
// (matmul.h), on activations prepared once per pass (ActQ8, kernel_table.h). A block stores
// x = d q + m with q in 0..15 (Q4_1) or 0..31 (Q5_1, the fifth bits in qh), its nibbles laid out
// as Q4_0's, so a row goes 4 blocks at a time as the Q4_0 groups do (vnni_group_act-inl.h): the
// unsigned q are the u8 operand as they are (no offset), two integer dots into the same lanes,
// one FMA by d d_x; the mins add m sum(x) per block, sum(x) taken as d_x sum(q) (sum8 / 8, as
// llama.cpp's Q8_1 activations carry it), 4 blocks per FMA on the side. A group's d, m (and
// qh) come from one or two loads and one word permutation. llama.cpp's Q5_K_M files hold Q5_1
// where a row is not a multiple of 256 wide (SmolLM2-135M's and Qwen2.5-0.5B's attention and
// gate/up). Twins: scalar::MatVecQ4_1Act, MatVecQ5_1Act (fast_dot_q4_1.cc). Compiled with
// -mavx512vnni; chosen only when the CPU has it (FastDotActKernel).
#include <immintrin.h>

#include <cstdint>

#include "kernels/kernel_table.h"
#include "kernels/row_streams.h"
#include "kernels/vnni_group_act-inl.h"

namespace smartgen::kernels::internal::avx512vnni {
namespace {

template <bool kFive>
inline constexpr int kBlockBytes = kFive ? 24 : 20;  // f16 d, f16 m, [u32 qh], 16 bytes of nibbles

// Words 0-15 of the result: block k's d at words 4k..4k+3; words 16-19: the 4 m; Q5_1 also
// words 20-23: qh's low halves (bits of elements 0-15) and 24-27: its high halves. From the
// group's bytes 0-63 (words 0-31) and, for Q5_1, 32-95 (words 16-47, indices 32-63).
template <bool kFive>
inline __m512i GroupWords(const std::byte* blk, int n, bool part) {
  constexpr int kBytes = kBlockBytes<kFive>;
  const auto load = [&](int at) {
    return part ? _mm512_maskz_loadu_epi8(FirstBytes(n * kBytes - at), blk + at)
                : _mm512_loadu_si512(blk + at);
  };
  if constexpr (!kFive) {
    alignas(64) static constexpr std::uint16_t kIdx[32] = {0,  0,  0,  0,  10, 10, 10, 10, 20, 20,
                                                           20, 20, 30, 30, 30, 30, 1,  11, 21, 31};
    return _mm512_permutexvar_epi16(_mm512_load_si512(kIdx), load(0));
  } else {
    // Block k's word w is word 12k + w of the group: below 32 from the first load, else index
    // 32 + (12k + w - 16) of the second.
    alignas(64) static constexpr std::uint16_t kIdx[32] = {
        0, 0,  0,  0,  12, 12, 12, 12, 24, 24, 24, 24, 52, 52, 52, 52,
        1, 13, 25, 53, 2,  14, 26, 54, 3,  15, 27, 55, 0,  0,  0,  0};
    return _mm512_permutex2var_epi16(load(0), _mm512_load_si512(kIdx), load(32));
  }
}

// acc += a group's scaled integer dots, mins += its 4 blocks' m times their sum(x).
template <bool kFive, bool kPart>
inline void GroupDotMin(const std::byte* blk, int n, const GroupAct& g, const float* xsum8,
                        __m512* acc, __m128* mins) {
  constexpr int kBytes = kBlockBytes<kFive>;
  constexpr int kQs = kFive ? 8 : 4;
  const auto nibbles = [&](int k) {
    const auto* p = reinterpret_cast<const __m128i*>(blk + k * kBytes + kQs);
    return kPart ? _mm_maskz_loadu_epi8(k < n ? 0xFFFF : 0, p) : _mm_loadu_si128(p);
  };
  __m512i n4 = _mm512_castsi128_si512(nibbles(0));
  n4 = _mm512_inserti32x4(_mm512_inserti32x4(_mm512_inserti32x4(n4, nibbles(1), 1), nibbles(2), 2),
                          nibbles(3), 3);
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  __m512i lo = _mm512_and_si512(n4, low4);
  __m512i hi = _mm512_and_si512(_mm512_srli_epi16(n4, 4), low4);
  const __m512i words = GroupWords<kFive>(blk, n, kPart);
  const __m128i upper = _mm512_extracti32x4_epi32(words, 2);  // words 16-23
  if constexpr (kFive) {
    // Nibbles < 16: or-ing the fifth bit in is adding 16.
    const __m512i sixteen = _mm512_set1_epi8(16);
    const auto mlo = static_cast<std::uint64_t>(_mm_extract_epi64(upper, 1));
    const auto mhi =
        static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm512_extracti32x4_epi32(words, 3)));
    lo = _mm512_mask_add_epi8(lo, _cvtu64_mask64(mlo), lo, sixteen);
    hi = _mm512_mask_add_epi8(hi, _cvtu64_mask64(mhi), hi, sixteen);
  }
  const __m512i dot = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(g.offset, lo, g.lo), hi, g.hi);
  const __m512 dw = _mm512_cvtph_ps(_mm512_castsi512_si256(words));
  *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, g.dx), *acc);
  const __m128 sum8 =
      kPart ? _mm_maskz_loadu_ps(static_cast<__mmask8>((1u << n) - 1), xsum8) : _mm_loadu_ps(xsum8);
  *mins = _mm_fmadd_ps(_mm_cvtph_ps(upper), _mm_mul_ps(sum8, _mm_set1_ps(0.125f)), *mins);
}

template <bool kFive>
float RowMin(const std::byte* w, std::int64_t nb, const GroupAct* groups, const float* sum8,
             std::size_t ahead) {
  constexpr int kGroupBytes = 4 * kBlockBytes<kFive>;
  __m512 acc = _mm512_setzero_ps();
  __m128 mins = _mm_setzero_ps();
  const std::int64_t whole = nb / 4;
  for (std::int64_t k = 0; k < whole; ++k) {
    const std::byte* blk = w + k * kGroupBytes;
    for (int off = 0; off < kGroupBytes; off += 64) __builtin_prefetch(blk + ahead + off, 0, 3);
    GroupDotMin<kFive, false>(blk, 4, groups[k], sum8 + 4 * k, &acc, &mins);
  }
  if (nb % 4 != 0) {
    GroupDotMin<kFive, true>(w + whole * kGroupBytes, static_cast<int>(nb % 4), groups[whole],
                             sum8 + 4 * whole, &acc, &mins);
  }
  const __m128 m2 = _mm_add_ps(mins, _mm_movehl_ps(mins, mins));
  return _mm512_reduce_add_ps(acc) + _mm_cvtss_f32(_mm_add_ss(m2, _mm_movehdup_ps(m2)));
}

template <bool kFive>
void MatVecMin(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
               std::int64_t r0, std::int64_t r1) {
  const std::int64_t nb = cols / kGroupBlock;
  const GroupAct* groups = PrepareGroups<0>(x, nb);  // no offset: the q are unsigned as stored
  GemvRows(w, row_bytes, y, r0, r1, [&](const std::byte* row, std::size_t ahead) {
    return RowMin<kFive>(row, nb, groups, x.sum8, ahead);
  });
}

}  // namespace

void MatVecQ4_1(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
                std::int64_t r0, std::int64_t r1) {
  MatVecMin<false>(w, row_bytes, cols, x, y, r0, r1);
}

void MatVecQ5_1(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
                std::int64_t r0, std::int64_t r1) {
  MatVecMin<true>(w, row_bytes, cols, x, y, r0, r1);
}

}  // namespace smartgen::kernels::internal::avx512vnni
