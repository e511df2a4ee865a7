// Q4_K, Q5_K and Q6_K x Q8_0 GEMVs with AVX-512 VNNI (vpdpbusd), behind kernels::SetFastDot
// (matmul.h), on activations prepared once per pass (ActQ8, kernel_table.h). Twins:
// scalar::MatVecQ4_KAct, MatVecQ5_KAct, MatVecQ6_KAct (fast_dot_k.cc), which state the formulas.
// Q4_K (and Q5_K, which adds each value's fifth bit from qh as 16 under a byte mask): each
// 64-byte load of nibbles (128 weights) gives two byte vectors, its low and its high nibbles,
// each dotted in one vpdpbusd with the activations laid out once per call in the same order
// (HalfActQ4K; on an AMD EPYC Zen 5 1.14x in cache against rebuilding each 64 weights in element
// order first); Q6_K: every 64 weights are rebuilt as bytes in element order, their stored values
// (0..63) the unsigned operand and the offset of 32 the dot's initial value. No widening to f32;
// the 16 int32 lanes of a dot are scaled by their sub-block's (d * sc) * d_x in one FMA, and the
// sub-block scales of a row's super-block are decoded once, as one vector. Compiled with
// -mavx512vnni; chosen only when the CPU has it (FastDotActKernel).
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/kquant_scales-inl.h"
#include "kernels/row_streams.h"

namespace smartgen::kernels::internal::avx512vnni {
namespace {

constexpr int kQK = 256;         // elements per super-block
constexpr int kQ4KBytes = 144;   // d, dmin, scales[12], qs[128]
constexpr int kQ5KBytes = 176;   // d, dmin, scales[12], qh[32], qs[128]
constexpr int kQ6KBytes = 210;   // ql[128], qh[64], scales[16], d

// The bytes a GEMV's row stream reads `ahead` bytes from now (StreamPrefetchBytes), into every
// cache level.
void Prefetch(const std::byte* blk, int bytes, std::size_t ahead) {
  for (int off = 0; off < bytes; off += 64) __builtin_prefetch(blk + ahead + off, 0, 3);
}

// A GEMV's activations for the Q4_K kernel, per half super-block (128 values) h, in the order of
// its 64 qs bytes' nibbles: lo[h] holds elements 0-31 and 64-95 of the half (the low nibbles),
// hi[h] elements 32-63 and 96-127 (the high nibbles); and per super-block b, at halves[2 b].scale,
// [d_x of its 8 activation blocks, their sums xsum = sum8 / 8]. Built once per call, not once per
// row: per row and super-block the kernel spends about 43 instructions, and these 4 were 9 % of
// them.
struct HalfActQ4K {
  __m512i lo, hi;
  __m512 scale;  // in the even half of each super-block
};

const HalfActQ4K* PrepareHalvesQ4K(const ActQ8& x, std::int64_t nsb) {
  thread_local std::vector<HalfActQ4K> storage;
  const auto halves = static_cast<std::size_t>(2 * nsb);
  if (storage.size() < halves) storage.resize(halves);
  for (std::size_t h = 0; h < halves; ++h) {
    const __m512i a = _mm512_loadu_si512(x.q + 128 * h), b = _mm512_loadu_si512(x.q + 128 * h + 64);
    storage[h].lo = _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(1, 0, 1, 0));
    storage[h].hi = _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(3, 2, 3, 2));
    if (h % 2 == 0) {  // super-block h / 2's 8 blocks (an odd h would read past x.d's end)
      storage[h].scale = _mm512_insertf32x8(
          _mm512_castps256_ps512(_mm256_loadu_ps(x.d + 4 * h)),
          _mm256_mul_ps(_mm256_loadu_ps(x.sum8 + 4 * h), _mm256_set1_ps(0.125f)), 1);
    }
  }
  return storage.data();
}

// Q4_K, or with kFive Q5_K (the same scales and nibbles, qs 32 bytes later, after qh[32]: bit j
// of qh[l] is the fifth bit of sub-block j's element l).
template <bool kFive>
float RowQ4K(const std::byte* w, std::int64_t nsb, const ActQ8& x, const HalfActQ4K* halves,
             std::size_t ahead) {
  constexpr int kBlockBytes = kFive ? kQ5KBytes : kQ4KBytes;
  constexpr int kQs = kFive ? 48 : 16;
  const __m512i zero = _mm512_setzero_si512(), low4 = _mm512_set1_epi8(0x0F);
  const __m512i sixteen = _mm512_set1_epi8(16);
  // A half super-block h's 64 qs bytes: their low nibbles are sub-blocks 4h (lanes 0-7 of the
  // dot, bytes 0-31) and 4h + 2 (lanes 8-15, bytes 32-63), their high nibbles sub-blocks 4h + 1
  // and 4h + 3. five_*: the qh bit of each byte's sub-block (qh is read into both 32-byte halves).
  __m512i pick_lo[2], pick_hi[2], five_lo[2], five_hi[2];
  for (int h = 0; h < 2; ++h) {
    const int j = 4 * h;
    pick_lo[h] = _mm512_set_epi32(j + 2, j + 2, j + 2, j + 2, j + 2, j + 2, j + 2, j + 2, j, j, j,
                                  j, j, j, j, j);
    pick_hi[h] = _mm512_add_epi32(pick_lo[h], _mm512_set1_epi32(1));
    const auto bits = [](int a, int b) {
      return _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << a)),
                                _mm256_set1_epi8(static_cast<char>(1 << b)), 1);
    };
    five_lo[h] = bits(j, j + 2);
    five_hi[h] = bits(j + 1, j + 3);
  }
  // d and dmin (the first two f16 of a block) as lanes 0-7 and 8-15.
  const __m512i spread_d = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  __m512 acc = _mm512_setzero_ps(), mins = _mm512_setzero_ps();
  for (std::int64_t b = 0; b < nsb; ++b) {
    const HalfActQ4K* xh = halves + 2 * b;
    const std::byte* blk = w + b * kBlockBytes;
    Prefetch(blk, kBlockBytes, ahead);
    std::int32_t d_dmin;
    std::memcpy(&d_dmin, blk, 4);
    const __m512 dd = _mm512_permutexvar_ps(
        spread_d, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128(d_dmin))));
    // Lanes 0-7: (d sc_j) d_x_j; lanes 8-15: (dmin m_j) xsum_j.
    const __m512 f = _mm512_mul_ps(
        _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(ScalesMinsQ4K(blk + 4))), dd),
        xh[0].scale);
    mins = _mm512_add_ps(mins, f);  // lanes 8-15 are the ones read
    __m512i qh = zero;
    if constexpr (kFive)
      qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16)));
    for (int h = 0; h < 2; ++h) {
      // qs[32 g + l]: low nibble element 64 g + l, high nibble element 64 g + 32 + l.
      const __m512i qs = _mm512_loadu_si512(blk + kQs + 64 * h);
      __m512i lo = _mm512_and_si512(qs, low4);
      __m512i hi = _mm512_and_si512(_mm512_srli_epi16(qs, 4), low4);
      if constexpr (kFive) {
        // Nibbles < 16: or-ing the fifth bit in is adding 16.
        lo = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(qh, five_lo[h]), lo, sixteen);
        hi = _mm512_mask_add_epi8(hi, _mm512_test_epi8_mask(qh, five_hi[h]), hi, sixteen);
      }
      const __m512i dot_lo = _mm512_dpbusd_epi32(zero, lo, xh[h].lo);
      const __m512i dot_hi = _mm512_dpbusd_epi32(zero, hi, xh[h].hi);
      acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot_lo), _mm512_permutexvar_ps(pick_lo[h], f), acc);
      acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot_hi), _mm512_permutexvar_ps(pick_hi[h], f), acc);
    }
  }
  return _mm512_reduce_add_ps(acc) - _mm512_mask_reduce_add_ps(0xFF00, mins);
}

// A GEMV's integer-dot offsets for the Q6_K kernel: per 64 activations, -32 times each lane's sum
// of 4, the initial value that makes a dot of the stored values (0..63) a dot of q - 32; and per
// super-block b, at offsets[4 b].dx, the d_x of each of its 16 sub-blocks of 16 (block j / 2's).
// Built once per call, not once per row.
struct Offsets64 {
  __m512i lanes;  // a struct: std::vector<__m512i> would drop the vector type's attributes
  __m512 dx;      // in the first quarter of each super-block
};
const Offsets64* PrepareOffsetsQ6K(const ActQ8& x, std::int64_t nsb) {
  thread_local std::vector<Offsets64> storage;
  const auto quarters = static_cast<std::size_t>(4 * nsb);
  if (storage.size() < quarters) storage.resize(quarters);
  const __m512i thirty_two = _mm512_set1_epi8(32);
  const __m512i halves = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
  for (std::size_t v = 0; v < quarters; ++v) {
    const __m512i sum =
        _mm512_dpbusd_epi32(_mm512_setzero_si512(), thirty_two, _mm512_loadu_si512(x.q + 64 * v));
    storage[v].lanes = _mm512_sub_epi32(_mm512_setzero_si512(), sum);
    if (v % 4 == 0) {  // super-block v / 4's 8 blocks (another v would read past x.d's end)
      storage[v].dx =
          _mm512_permutexvar_ps(halves, _mm512_castps256_ps512(_mm256_loadu_ps(x.d + 2 * v)));
    }
  }
  return storage.data();
}

template <int R>
void RowsQ6K(const std::byte* w, std::size_t row_bytes, std::int64_t nsb, const ActQ8& x,
             const Offsets64* offsets, float* y, std::size_t ahead) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
  // A dot of elements [64 v, 64 v + 64) has lane i in sub-block (of 16) 4 v + i / 4.
  __m512i pick[4];
  for (int v = 0; v < 4; ++v) {
    const int j = 4 * v;
    pick[v] = _mm512_set_epi32(j + 3, j + 3, j + 3, j + 3, j + 2, j + 2, j + 2, j + 2, j + 1, j + 1, j + 1,
                               j + 1, j, j, j, j);
  }
  __m512 acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
  for (std::int64_t b = 0; b < nsb; ++b) {
    const Offsets64* off = offsets + 4 * b;
    const __m512 dx = off[0].dx;
    for (int i = 0; i < R; ++i) {
      const std::byte* blk = w + i * row_bytes + b * kQ6KBytes;
      Prefetch(blk, kQ6KBytes, ahead);
      const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192));
      std::int16_t d16;
      std::memcpy(&d16, blk + 208, 2);
      const __m512 s = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sc)),
                                                   _mm512_cvtph_ps(_mm256_set1_epi16(d16))),
                                     dx);
      __m512 a = acc[i];
      for (int n = 0; n < 2; ++n) {
        const __m512i ql = _mm512_loadu_si512(blk + 64 * n);
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 128 + 32 * n));
        // Bits 0-1 (4-5) of byte l: quarter 0 (2) in the low half, quarter 1 (3) in the high half.
        const __m512i qhh = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
        const __m512i v01 = _mm512_or_si512(_mm512_and_si512(ql, low4),
                                            _mm512_and_si512(_mm512_slli_epi16(qhh, 4), bits45));
        const __m512i v23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                                            _mm512_and_si512(qhh, bits45));
        for (int k = 0; k < 2; ++k) {
          const int v = 2 * n + k;
          // The stored values (0..63) are the u8 operand; the offset of 32 is the initial value.
          const __m512i xq = _mm512_loadu_si512(x.q + b * kQK + 64 * v);
          const __m512i dot = _mm512_dpbusd_epi32(off[v].lanes, k == 0 ? v01 : v23, xq);
          a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_permutexvar_ps(pick[v], s), a);
        }
      }
      acc[i] = a;
    }
  }
  for (int i = 0; i < R; ++i) y[i] = _mm512_reduce_add_ps(acc[i]);
}

template <bool kFive>
void MatVecQ4KQ5K(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
                  std::int64_t r0, std::int64_t r1) {
  const std::int64_t nsb = cols / kQK;
  const HalfActQ4K* halves = PrepareHalvesQ4K(x, nsb);
  GemvRows(w, row_bytes, y, r0, r1, [&](const std::byte* row, std::size_t ahead) {
    return RowQ4K<kFive>(row, nsb, x, halves, ahead);
  });
}

}  // namespace

void MatVecQ4_K(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
                std::int64_t r0, std::int64_t r1) {
  MatVecQ4KQ5K<false>(w, row_bytes, cols, x, y, r0, r1);
}

void MatVecQ5_K(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
                std::int64_t r0, std::int64_t r1) {
  MatVecQ4KQ5K<true>(w, row_bytes, cols, x, y, r0, r1);
}

void MatVecQ6_K(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
                std::int64_t r0, std::int64_t r1) {
  const std::int64_t nsb = cols / kQK;
  const auto* base = static_cast<const std::byte*>(w);
  const Offsets64* offsets = PrepareOffsetsQ6K(x, nsb);
  const std::size_t ahead = StreamPrefetchBytes(r1 - r0, row_bytes);
  ForEachRowTwoStreams(r0, r1, row_bytes, [&](std::int64_t r) {
    RowsQ6K<1>(base + r * row_bytes, row_bytes, nsb, x, offsets, y + r, ahead);
  });
}

}  // namespace smartgen::kernels::internal::avx512vnni
