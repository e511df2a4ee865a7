// Q8_0, Q4_0 and Q5_0 x Q8_0 GEMVs with AVX-512 VNNI (vpdpbusd), behind kernels::SetFastDot
// (matmul.h), on activations prepared once per pass (ActQ8, kernel_table.h; PrepareActQ8 here is
// bit for bit scalar::PrepareActQ8). Each 32-weight block is one integer dot (Q4_0/Q5_0 offsets
// included) scaled by d_w * d_x; a row goes 4 blocks at a time, whose 4 scales come from one or two
// vector loads and a word permutation instead of a scalar load and conversion each. What does not
// depend on the row (activation scales, signs, Q4_0/Q5_0 offsets and order) is laid out once per
// call (PairActQ8, GroupAct): on an AMD EPYC Zen 5 that and the Q4_0/Q5_0 group layout (two
// integer dots into one set of lanes, one FMA per 4 blocks) made in-cache Q5_0 GEMVs 1.4x and
// Q4_0 1.5x faster, Q8_0 1.1x. A row whose block count is not a multiple of 4 (SmolLM2-135M's 576
// columns: 18 blocks) ends in a Q4_0 / Q5_0 part group (masked loads, zero activations for the
// missing blocks), not block by block: in-cache GEMVs of 576 columns 1.08x (Q4_0) faster, Q5_0
// the same (bench_kernels BM_GemvHot/<type>/.../576). Q8_0 rows regrouped at load
// (q8_0_groups.h: values plus 128, 4 blocks' halves in two loads) take the Q4_0 group's shape
// with an offset of 128; Q8_0 in the file's layout sums the same lanes (pair dots folded), so
// both give the same bits. Twins:
// scalar::MatVecQ8_0Act, MatVecQ4_0Act, MatVecQ5_0Act (fast_dot.cc). Compiled with
// -mavx512vnni; chosen only when the CPU has it (FastDotActKernel).
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/q5_0_groups.h"
#include "kernels/q8_0_groups.h"
#include "kernels/row_streams.h"
#include "kernels/vnni_group_act-inl.h"

namespace smartgen::kernels::internal::avx512vnni {
namespace {

constexpr int kBlock = 32;          // Q8_0 / Q4_0 block
constexpr int kQ8BlockBytes = 34;   // f16 scale + 32 int8
constexpr int kQ4BlockBytes = 18;   // f16 scale + 16 bytes of nibbles
constexpr int kQ5BlockBytes = 22;   // f16 scale + 32 high bits + 16 bytes of nibbles
// A GEMV reads its rows one after another (one sequential stream per thread: on an AMD EPYC
// Zen 5 Qwen2.5-0.5B decoded 1.1-1.15x faster so than with 8 rows interleaved, Q4_0 1.15x; see
// matmul_simd-inl.h), prefetching what it reads StreamPrefetchBytes later into every cache level,
// its rows read as two streams where the chunk is big enough (row_streams.h).

template <bool kFive>
inline constexpr int kNibbleBias = kFive ? 16 : 8;

float HalfAt(const std::byte* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Q8_0 in the file's layout: vpdpbusd multiplies u8 by s8, so the weights take the activations'
// signs (weights are in [-127, 127], as ggml writes them) and |q| is the u8 operand; per pair of
// blocks (2p, 2p + 1) |q| of the 64 activations and their sign bits, built once per call.
struct PairActQ8 {
  __m512i qabs;
  __mmask64 neg;
};

const PairActQ8* PreparePairsQ8(const ActQ8& x, std::int64_t pairs) {
  thread_local std::vector<PairActQ8> storage;
  if (storage.size() < static_cast<std::size_t>(pairs)) storage.resize(static_cast<std::size_t>(pairs));
  for (std::int64_t p = 0; p < pairs; ++p) {
    PairActQ8& a = storage[static_cast<std::size_t>(p)];
    a.qabs = _mm512_loadu_si512(x.qabs + 2 * p * kBlock);
    a.neg =
        static_cast<__mmask64>(x.qneg[2 * p]) | (static_cast<__mmask64>(x.qneg[2 * p + 1]) << 32);
  }
  return storage.data();
}

// One pair of Q8_0 blocks (bp, bp + 34) over its prepared activations: their integer dot, block
// 2p's elements 4j..4j+3 in lane j, block 2p + 1's in lane 8 + j.
inline __m512i PairDotQ8(const std::byte* bp, const PairActQ8& a) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp + 2));
  const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp + kQ8BlockBytes + 2));
  __m512i wq = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  wq = _mm512_mask_sub_epi8(wq, a.neg, _mm512_setzero_si512(), wq);
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), a.qabs, wq);
}

// Two pair dots (blocks 0-1, 2-3) folded into the grouped layout's lanes (q8_0_groups.h): block k
// in lanes 4k..4k+3, lane j of it summing elements 4j..4j+3 and 16+4j..16+4j+3. Both layouts
// thus scale and sum the same integers in the same order, and give the same bits.
inline __m512i FoldPairsQ8(__m512i d01, __m512i d23) {
  const __m512i first = _mm512_set_epi32(27, 26, 25, 24, 19, 18, 17, 16, 11, 10, 9, 8, 3, 2, 1, 0);
  const __m512i second = _mm512_add_epi32(first, _mm512_set1_epi32(4));
  return _mm512_add_epi32(_mm512_permutex2var_epi32(d01, first, d23),
                          _mm512_permutex2var_epi32(d01, second, d23));
}

// The f16 scales of Q8_0 blocks b..b+3 in the file's layout (bytes 0, 34 | 68, 102: words 0, 17,
// 34, 51 of two loads), each over its block's 4 lanes.
inline __m512 GroupScalesQ8(const std::byte* blk) {
  alignas(64) static constexpr std::uint16_t kIdx[32] = {0,  0,  0,  0,  17, 17, 17, 17, 34, 34, 34,
                                                         34, 51, 51, 51, 51, 0,  0,  0,  0,  0,  0,
                                                         0,  0,  0,  0,  0,  0,  0,  0,  0,  0};
  const __m512i words = _mm512_permutex2var_epi16(_mm512_loadu_si512(blk), _mm512_load_si512(kIdx),
                                                  _mm512_loadu_si512(blk + 64));
  return _mm512_cvtph_ps(_mm512_castsi512_si256(words));
}

// acc += a row's last n (1-3) Q8_0 blocks, in the file's layout in either kernel, in the grouped
// lanes: their values plus 128 from 16-byte loads, the missing blocks' lanes zero (so are their
// activations and scales).
inline __m512 PartDotQ8(const std::byte* blk, int n, const GroupAct& g, __m512 acc) {
  const auto half = [&](int k, int at) {
    return _mm_maskz_loadu_epi8(k < n ? 0xFFFF : 0, blk + k * kQ8BlockBytes + 2 + at);
  };
  const auto quad = [&](int at) {
    const __m512i v = _mm512_castsi128_si512(half(0, at));
    return _mm512_inserti32x4(
        _mm512_inserti32x4(_mm512_inserti32x4(v, half(1, at), 1), half(2, at), 2), half(3, at), 3);
  };
  const __m512i top = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i lo = _mm512_xor_si512(quad(0), top), hi = _mm512_xor_si512(quad(16), top);
  const __m512i spread4 = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  const __m128 d = _mm_setr_ps(HalfAt(blk), n > 1 ? HalfAt(blk + kQ8BlockBytes) : 0.0f,
                               n > 2 ? HalfAt(blk + 2 * kQ8BlockBytes) : 0.0f, 0.0f);
  const __m512 dw = _mm512_permutexvar_ps(spread4, _mm512_castps128_ps512(d));
  const __m512i dot = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(g.offset, lo, g.lo), hi, g.hi);
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, g.dx), acc);
}

// One Q8_0 row in the file's layout: per 4 blocks (136 bytes) two pair dots folded into one set of
// lanes, their 4 scales from two loads, one FMA; then the part group.
float RowQ8(const std::byte* w, std::int64_t nb, const PairActQ8* pairs, const GroupAct* groups,
            std::size_t ahead) {
  __m512 acc = _mm512_setzero_ps();
  const std::byte* const whole_end = w + nb / 4 * 4 * kQ8BlockBytes;
  const PairActQ8* a = pairs;
  const GroupAct* g = groups;
  for (const std::byte* blk = w; blk != whole_end; blk += 4 * kQ8BlockBytes, a += 2, ++g) {
    for (int off = 0; off < 4 * kQ8BlockBytes; off += 64)
      __builtin_prefetch(blk + ahead + off, 0, 3);
    const __m512i dot = FoldPairsQ8(PairDotQ8(blk, a[0]), PairDotQ8(blk + 2 * kQ8BlockBytes, a[1]));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(GroupScalesQ8(blk), g->dx), acc);
  }
  if (nb % 4 != 0) acc = PartDotQ8(whole_end, static_cast<int>(nb % 4), *g, acc);
  return _mm512_reduce_add_ps(acc);
}

// acc += a grouped Q8_0 row's part group of n (1-3) blocks (q8_0_groups.h: elements 0-15 of each,
// 16-31 of each, the scales, n of each): the lanes and values PartDotQ8 takes from the file's
// layout (a missing block's values are 0 here, 128 there: both times zero activations).
inline __m512 PartDotQ8Grouped(const std::byte* blk, int n, const GroupAct& g, __m512 acc) {
  const __m512i spread4 = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  const __m512i lo = _mm512_maskz_loadu_epi8(FirstBytes(16 * n), blk);
  const __m512i hi = _mm512_maskz_loadu_epi8(FirstBytes(16 * n), blk + 16 * n);
  const __m128i d16 = _mm_maskz_loadu_epi16(static_cast<__mmask8>((1u << n) - 1), blk + 32 * n);
  const __m512 dw = _mm512_permutexvar_ps(spread4, _mm512_castps128_ps512(_mm_cvtph_ps(d16)));
  const __m512i dot = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(g.offset, lo, g.lo), hi, g.hi);
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, g.dx), acc);
}

// One grouped Q8_0 row (q8_0_groups.h): per group two 64-byte loads, two integer dots into the
// same lanes, the scales from one 8-byte load, one FMA; then the part group.
float RowQ8Groups(const std::byte* w, std::int64_t nb, const GroupAct* groups, std::size_t ahead) {
  constexpr int kGroupBytes = 4 * kQ8BlockBytes;
  const __m512i spread4 = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  __m512 acc = _mm512_setzero_ps();
  const std::byte* const whole_end = w + nb / 4 * kGroupBytes;
  const GroupAct* g = groups;
  for (const std::byte* blk = w; blk != whole_end; blk += kGroupBytes, ++g) {
    for (int off = 0; off < kGroupBytes; off += 64) __builtin_prefetch(blk + ahead + off, 0, 3);
    const __m512i lo = _mm512_loadu_si512(blk), hi = _mm512_loadu_si512(blk + 64);
    const __m512i dot = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(g->offset, lo, g->lo), hi, g->hi);
    const __m128i d16 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 128));
    const __m512 dw = _mm512_permutexvar_ps(spread4, _mm512_castps128_ps512(_mm_cvtph_ps(d16)));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, g->dx), acc);
  }
  if (nb % 4 != 0) acc = PartDotQ8Grouped(whole_end, static_cast<int>(nb % 4), *g, acc);
  return _mm512_reduce_add_ps(acc);
}

// The f16 scales of 4 consecutive blocks, each spread over its block's 4 lanes, and for Q5_0
// the fifth bits: bit e of block k's qh is element e's, so bits 0-15 (the elements in lo) make
// *mlo's bits 16 k + e and bits 16-31 *mhi's. All from one or two loads and one word permutation.
// kPart: only the first `n` blocks are there (a row's part group); the rest read as zero.
template <bool kFive, bool kPart>
inline __m512 GroupScales4(const std::byte* blk, int n, __mmask64* mlo, __mmask64* mhi) {
  constexpr int kBytes = kFive ? kQ5BlockBytes : kQ4BlockBytes;
  const auto load = [&](int at) {
    return kPart ? _mm512_maskz_loadu_epi8(FirstBytes(n * kBytes - at), blk + at)
                 : _mm512_loadu_si512(blk + at);
  };
  __m512i words;
  if constexpr (!kFive) {
    // d at bytes 0, 18, 36, 54: words 0, 9, 18, 27 of one load, into words 16-31.
    alignas(64) static constexpr std::uint16_t kIdx[32] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                           0, 0, 0, 0, 9, 9, 9, 9, 18, 18, 18, 18, 27, 27, 27, 27};
    words = _mm512_permutexvar_epi16(_mm512_load_si512(kIdx), load(0));
    (void)mlo;
    (void)mhi;
  } else {
    // Block k at byte 22 k: d at 0, 22 | 44, 66, qh at 2, 24 | 46, 68 (words of a first load and,
    // from 32 on, of a second at byte 24). Words 0-3: the qh low halves, 4-7 the high ones.
    alignas(64) static constexpr std::uint16_t kIdx[32] = {
        1, 12, 43, 54, 2, 13, 44, 55, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 11, 11, 11, 11, 42, 42, 42, 42, 53, 53, 53, 53};
    words = _mm512_permutex2var_epi16(load(0), _mm512_load_si512(kIdx), load(24));
    const __m128i bits = _mm512_castsi512_si128(words);
    *mlo = _cvtu64_mask64(static_cast<std::uint64_t>(_mm_cvtsi128_si64(bits)));
    *mhi = _cvtu64_mask64(static_cast<std::uint64_t>(_mm_extract_epi64(bits, 1)));
  }
  return _mm512_cvtph_ps(_mm512_extracti64x4_epi64(words, 1));
}

// A group's 64 nibble bytes (blocks in order, 16 bytes each); kPart: the first n blocks, zeros after.
template <bool kFive, bool kPart>
inline __m512i GroupNibbles(const std::byte* blk, int n) {
  constexpr int kBytes = kFive ? kQ5BlockBytes : kQ4BlockBytes;
  constexpr int kQs = kFive ? 6 : 2;  // offset of the nibbles in a block
  const auto at = [&](int k) {
    const auto* p = reinterpret_cast<const __m128i*>(blk + k * kBytes + kQs);
    return kPart ? _mm_maskz_loadu_epi8(k < n ? 0xFFFF : 0, p) : _mm_loadu_si128(p);
  };
  const __m512i v = _mm512_castsi128_si512(at(0));
  return _mm512_inserti32x4(_mm512_inserti32x4(_mm512_inserti32x4(v, at(1), 1), at(2), 2), at(3), 3);
}

// acc += one group's scaled dot: its two integer dots into the same lanes, one FMA.
template <bool kFive, bool kPart>
inline __m512 GroupDot(const std::byte* blk, int n, const GroupAct& g, __m512 acc) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i n4 = GroupNibbles<kFive, kPart>(blk, n);
  __m512i lo = _mm512_and_si512(n4, low4);
  __m512i hi = _mm512_and_si512(_mm512_srli_epi16(n4, 4), low4);
  __mmask64 mlo = 0, mhi = 0;
  const __m512 dw = GroupScales4<kFive, kPart>(blk, n, &mlo, &mhi);
  if constexpr (kFive) {
    // Nibbles < 16: or-ing the fifth bit in is adding 16.
    lo = _mm512_or_si512(lo, _mm512_maskz_mov_epi8(mlo, _mm512_set1_epi8(16)));
    hi = _mm512_or_si512(hi, _mm512_maskz_mov_epi8(mhi, _mm512_set1_epi8(16)));
  }
  const __m512i dot = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(g.offset, lo, g.lo), hi, g.hi);
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, g.dx), acc);
}

// One row over prepared groups: the whole groups, then the part group if the row has one.
template <bool kFive>
float RowQ4(const std::byte* w, std::int64_t nb, const GroupAct* groups, std::size_t ahead) {
  constexpr int kGroupBytes = 4 * (kFive ? kQ5BlockBytes : kQ4BlockBytes);
  __m512 acc = _mm512_setzero_ps();
  const std::byte* const whole_end = w + nb / 4 * kGroupBytes;
  const GroupAct* g = groups;
  for (const std::byte* blk = w; blk != whole_end; blk += kGroupBytes, ++g) {
    for (int off = 0; off < kGroupBytes; off += 64) __builtin_prefetch(blk + ahead + off, 0, 3);
    acc = GroupDot<kFive, false>(blk, 4, *g, acc);
  }
  if (nb % 4 != 0) acc = GroupDot<kFive, true>(whole_end, static_cast<int>(nb % 4), *g, acc);
  return _mm512_reduce_add_ps(acc);
}

// acc += one grouped Q5_0 group's scaled dot (q5_0_groups.h: nibbles, fifth bits, scales apart),
// the same integer dots and FMA as GroupDot<true, false> on the file's layout.
inline __m512 GroupDotGrouped(const std::byte* blk, const GroupAct& g, __m512 acc) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), fifth = _mm512_set1_epi8(16);
  const __m512i spread4 = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  const __m512i n4 = _mm512_loadu_si512(blk);
  __m512i lo = _mm512_and_si512(n4, low4);
  __m512i hi = _mm512_and_si512(_mm512_srli_epi16(n4, 4), low4);
  std::uint64_t qh_lo, qh_hi;
  std::memcpy(&qh_lo, blk + 64, 8);
  std::memcpy(&qh_hi, blk + 72, 8);
  lo = _mm512_mask_add_epi8(lo, _cvtu64_mask64(qh_lo), lo, fifth);
  hi = _mm512_mask_add_epi8(hi, _cvtu64_mask64(qh_hi), hi, fifth);
  const __m128i d16 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 80));
  const __m512 dw = _mm512_permutexvar_ps(spread4, _mm512_castps128_ps512(_mm_cvtph_ps(d16)));
  const __m512i dot = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(g.offset, lo, g.lo), hi, g.hi);
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, g.dx), acc);
}

// acc += a grouped row's part group of n (1-3) blocks (q5_0_groups.h: nibbles, qh low halves, qh
// high halves, scales, n of each), in the lanes and with the values GroupDot<true, true> takes
// from the file's layout.
inline __m512 PartDotGrouped(const std::byte* blk, int n, const GroupAct& g, __m512 acc) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), fifth = _mm512_set1_epi8(16);
  const __m512i spread4 = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  const auto halves = [&](int at) {  // n u16 from byte `at`, zeros after
    return _mm_maskz_loadu_epi16(static_cast<__mmask8>((1u << n) - 1), blk + at);
  };
  const __m512i n4 = _mm512_maskz_loadu_epi8(FirstBytes(16 * n), blk);
  __m512i lo = _mm512_and_si512(n4, low4);
  __m512i hi = _mm512_and_si512(_mm512_srli_epi16(n4, 4), low4);
  lo = _mm512_mask_add_epi8(
      lo, _cvtu64_mask64(static_cast<std::uint64_t>(_mm_cvtsi128_si64(halves(16 * n)))), lo, fifth);
  hi = _mm512_mask_add_epi8(
      hi, _cvtu64_mask64(static_cast<std::uint64_t>(_mm_cvtsi128_si64(halves(18 * n)))), hi, fifth);
  const __m512 dw =
      _mm512_permutexvar_ps(spread4, _mm512_castps128_ps512(_mm_cvtph_ps(halves(20 * n))));
  const __m512i dot = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(g.offset, lo, g.lo), hi, g.hi);
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, g.dx), acc);
}

template <bool kFive>
void MatVecQ4(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
              std::int64_t r0, std::int64_t r1) {
  const std::int64_t nb = cols / kBlock;
  const GroupAct* groups = PrepareGroups<kNibbleBias<kFive>>(x, nb);
  const auto* base = static_cast<const std::byte*>(w);
  const std::size_t ahead = StreamPrefetchBytes(r1 - r0, row_bytes);
  ForEachRowTwoStreams(r0, r1, row_bytes, [&](std::int64_t r) {
    y[r] = RowQ4<kFive>(base + r * row_bytes, nb, groups, ahead);
  });
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
  const PairActQ8* pairs = PreparePairsQ8(x, nb / 2);
  const GroupAct* groups = PrepareGroups<128>(x, nb);
  const std::size_t ahead = StreamPrefetchBytes(r1 - r0, row_bytes);
  ForEachRowTwoStreams(r0, r1, row_bytes, [&](std::int64_t r) {
    y[r] = RowQ8(base + r * row_bytes, nb, pairs, groups, ahead);
  });
}

void MatVecQ8_0Groups(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x,
                      float* y, std::int64_t r0, std::int64_t r1) {
  const std::int64_t nb = cols / kBlock;
  const auto* base = static_cast<const std::byte*>(w);
  const GroupAct* groups = PrepareGroups<128>(x, nb);
  const std::size_t ahead = StreamPrefetchBytes(r1 - r0, row_bytes);
  ForEachRowTwoStreams(r0, r1, row_bytes, [&](std::int64_t r) {
    y[r] = RowQ8Groups(base + r * row_bytes, nb, groups, ahead);
  });
}

void MatVecQ4_0(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
                std::int64_t r0, std::int64_t r1) {
  MatVecQ4<false>(w, row_bytes, cols, x, y, r0, r1);
}

void MatVecQ5_0(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
                std::int64_t r0, std::int64_t r1) {
  MatVecQ4<true>(w, row_bytes, cols, x, y, r0, r1);
}

void MatVecQ5_0Groups(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x,
                      float* y, std::int64_t r0, std::int64_t r1) {
  constexpr int kGroupBytes = 4 * kQ5BlockBytes;
  const std::int64_t nb = cols / kBlock;
  const GroupAct* groups = PrepareGroups<kNibbleBias<true>>(x, nb);
  const auto* base = static_cast<const std::byte*>(w);
  const std::size_t ahead = StreamPrefetchBytes(r1 - r0, row_bytes);
  ForEachRowTwoStreams(r0, r1, row_bytes, [&](std::int64_t r) {
    const std::byte* row = base + r * row_bytes;
    __m512 acc = _mm512_setzero_ps();
    const std::byte* const whole_end = row + nb / 4 * kGroupBytes;
    const GroupAct* g = groups;
    for (const std::byte* blk = row; blk != whole_end; blk += kGroupBytes, ++g) {
      for (int off = 0; off < kGroupBytes; off += 64) __builtin_prefetch(blk + ahead + off, 0, 3);
      acc = GroupDotGrouped(blk, *g, acc);
    }
    if (nb % 4 != 0) acc = PartDotGrouped(whole_end, static_cast<int>(nb % 4), *g, acc);
    y[r] = _mm512_reduce_add_ps(acc);
  });
}

}  // namespace smartgen::kernels::internal::avx512vnni
