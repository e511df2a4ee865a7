// IQ4_NL and IQ4_XS x Q8_0 GEMVs with AVX-512 VNNI (vpdpbusd), behind kernels::SetFastDot
// (matmul.h), on activations prepared once per pass (ActQ8, kernel_table.h). Both store a nibble
// per weight that indexes the 16 levels of the IQ4 grid (kIq4nlValues, -127..113); each 32-value
// block's 16 bytes hold elements 0-15 in their low nibbles and 16-31 in their high ones, the
// layout the Q4_0 groups read (vnni_group_act-inl.h). So a group of 4 blocks is the Q4_0 group
// dot with one byte shuffle per nibble vector that turns nibbles into levels plus 128 (1..241,
// the u8 operand), the offset of 128 the dot's initial value: no widening to f32, one FMA per 4
// blocks. IQ4_NL: 18-byte blocks (f16 d, nibbles), 4 blocks from four 16-byte loads; IQ4_XS:
// 256-value super-blocks (f16 d, 8 six-bit scales ls_j, 128 bytes of nibbles) whose blocks'
// nibbles are contiguous, so a group is one 64-byte load and its scales d (ls_j - 32).
// Twins: scalar::MatVecIq4NlAct, MatVecIq4XsAct (fast_dot_iq4.cc). Compiled with -mavx512vnni;
// chosen only when the CPU has it (FastDotActKernel).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/kernel_table.h"
#include "kernels/quant_more.h"
#include "kernels/row_streams.h"
#include "kernels/vnni_group_act-inl.h"

namespace smartgen::kernels::internal::avx512vnni {
namespace {

constexpr int kNlBlockBytes = 18;   // f16 d, 16 bytes of nibbles
constexpr int kXsBlockBytes = 136;  // f16 d, u16 scales_h, u8 scales_l[4], 128 bytes of nibbles
constexpr int kLevelBias = 128;

float HalfAt(const std::byte* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// vpshufb's table in every 128-bit lane: level q plus 128 at byte q.
__m512i LevelTable() {
  const __m128i levels = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues));
  return _mm512_broadcast_i32x4(_mm_xor_si128(levels, _mm_set1_epi8(static_cast<char>(0x80))));
}

// acc += one group's scaled dot: 64 nibble bytes (block k's in bytes 16k..16k+15), the 4 blocks'
// weight scales dw (each over its block's 4 lanes).
inline __m512 LevelsDot(__m512i n4, __m512 dw, const GroupAct& g, __m512i table, __m512 acc) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i lo = _mm512_shuffle_epi8(table, _mm512_and_si512(n4, low4));
  const __m512i hi = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(n4, 4), low4));
  const __m512i dot = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(g.offset, lo, g.lo), hi, g.hi);
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, g.dx), acc);
}

// An IQ4_NL group of 4 blocks, or with kPart the first n (1-3) of a row's last blocks (the rest
// read as zero; their activations are zero too).
template <bool kPart>
inline __m512 NlGroupDot(const std::byte* blk, int n, const GroupAct& g, __m512i table,
                         __m512 acc) {
  const auto nibbles = [&](int k) {
    const auto* p = reinterpret_cast<const __m128i*>(blk + k * kNlBlockBytes + 2);
    return kPart ? _mm_maskz_loadu_epi8(k < n ? 0xFFFF : 0, p) : _mm_loadu_si128(p);
  };
  __m512i n4 = _mm512_castsi128_si512(nibbles(0));
  n4 = _mm512_inserti32x4(_mm512_inserti32x4(_mm512_inserti32x4(n4, nibbles(1), 1), nibbles(2), 2),
                          nibbles(3), 3);
  // d at bytes 0, 18, 36, 54: words 0, 9, 18, 27 of one load, each into its block's 4 words.
  alignas(64) static constexpr std::uint16_t kIdx[32] = {0,  0,  0,  0,  9,  9,  9,  9,
                                                         18, 18, 18, 18, 27, 27, 27, 27};
  const __m512i bytes =
      kPart ? _mm512_maskz_loadu_epi8(FirstBytes(n * kNlBlockBytes), blk) : _mm512_loadu_si512(blk);
  const __m512i words = _mm512_permutexvar_epi16(_mm512_load_si512(kIdx), bytes);
  return LevelsDot(n4, _mm512_cvtph_ps(_mm512_castsi512_si256(words)), g, table, acc);
}

// The 8 sub-block scales of an IQ4_XS super-block, d (ls_j - 32) with ls_j = (scales_l's nibble j)
// | (scales_h's bits 2j, 2j + 1) << 4, as ggml's dequantizer computes them.
inline __m256 XsScales(const std::byte* blk) {
  std::uint16_t sh;
  std::uint32_t sl;
  std::memcpy(&sh, blk + 2, 2);
  std::memcpy(&sl, blk + 4, 4);
  const __m256i low =
      _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(sl)),
                                         _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                       _mm256_set1_epi32(0xF));
  const __m256i high = _mm256_and_si256(
      _mm256_srlv_epi32(_mm256_set1_epi32(sh), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
      _mm256_set1_epi32(3));
  const __m256i ls = _mm256_or_si256(low, _mm256_slli_epi32(high, 4));
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(ls, _mm256_set1_epi32(32))),
                       _mm256_set1_ps(HalfAt(blk)));
}

float RowIq4Nl(const std::byte* w, std::int64_t nb, const GroupAct* groups, __m512i table,
               std::size_t ahead) {
  constexpr int kGroupBytes = 4 * kNlBlockBytes;
  __m512 acc = _mm512_setzero_ps();
  const std::byte* const whole_end = w + nb / 4 * kGroupBytes;
  const GroupAct* g = groups;
  for (const std::byte* blk = w; blk != whole_end; blk += kGroupBytes, ++g) {
    for (int off = 0; off < kGroupBytes; off += 64) __builtin_prefetch(blk + ahead + off, 0, 3);
    acc = NlGroupDot<false>(blk, 4, *g, table, acc);
  }
  if (nb % 4 != 0) acc = NlGroupDot<true>(whole_end, static_cast<int>(nb % 4), *g, table, acc);
  return _mm512_reduce_add_ps(acc);
}

float RowIq4Xs(const std::byte* w, std::int64_t nsb, const GroupAct* groups, __m512i table,
               std::size_t ahead) {
  const __m512i spread4 = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  const __m512i next4 = _mm512_add_epi32(spread4, _mm512_set1_epi32(4));
  __m512 acc = _mm512_setzero_ps();
  for (std::int64_t b = 0; b < nsb; ++b) {
    const std::byte* blk = w + b * kXsBlockBytes;
    for (int off = 0; off < kXsBlockBytes; off += 64) __builtin_prefetch(blk + ahead + off, 0, 3);
    const __m512 scales = _mm512_castps256_ps512(XsScales(blk));
    acc = LevelsDot(_mm512_loadu_si512(blk + 8), _mm512_permutexvar_ps(spread4, scales),
                    groups[2 * b], table, acc);
    acc = LevelsDot(_mm512_loadu_si512(blk + 72), _mm512_permutexvar_ps(next4, scales),
                    groups[2 * b + 1], table, acc);
  }
  return _mm512_reduce_add_ps(acc);
}

}  // namespace

void MatVecIq4Nl(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
                 std::int64_t r0, std::int64_t r1) {
  const std::int64_t nb = cols / kGroupBlock;
  const GroupAct* groups = PrepareGroups<kLevelBias>(x, nb);
  const __m512i table = LevelTable();
  GemvRows(w, row_bytes, y, r0, r1, [&](const std::byte* row, std::size_t ahead) {
    return RowIq4Nl(row, nb, groups, table, ahead);
  });
}

void MatVecIq4Xs(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
                 std::int64_t r0, std::int64_t r1) {
  const GroupAct* groups = PrepareGroups<kLevelBias>(x, cols / kGroupBlock);
  const __m512i table = LevelTable();
  GemvRows(w, row_bytes, y, r0, r1, [&](const std::byte* row, std::size_t ahead) {
    return RowIq4Xs(row, cols / 256, groups, table, ahead);
  });
}

}  // namespace smartgen::kernels::internal::avx512vnni
