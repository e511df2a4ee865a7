// Q4_1, Q5_1, IQ4_NL, IQ4_XS, Q2_K and Q3_K x Q8_0 GEMVs with AVX2 integer dots, behind
// kernels::SetFastDot (matmul.h), for CPUs without AVX-512 VNNI: the formulas of the scalar twins
// (fast_dot_q4_1.cc, fast_dot_iq4.cc, fast_dot_k23.cc) and the VNNI kernels, each 32 values one
// vpmaddubsw and one vpmaddwd (avx2_intdot-inl.h), scaled in f32 per block or per sub-block.
//   Q4_1 / Q5_1: the stored q (0..15, 0..31) unsigned against the activations, one FMA by d d_x
//     per block; the mins m d_x sum(q) (sum8 / 8) summed apart, as the twin does.
//   IQ4_NL / IQ4_XS: the nibbles looked up as the grid's signed levels (vpshufb), which take the
//     activations' signs against |q| (vpsignb).
//   Q2_K / Q3_K: the 64 qs bytes as four 2-bit planes (element 128 n + 32 j + l is bits 2j of
//     qs[32 n + l]); a dot's lanes 0-3 and 4-7 are two sub-blocks of 16, scaled by one vector of
//     d sc_k d_x. Q2_K's mins dmin (sc_k >> 4) d_x sum_k(q) summed apart; Q3_K's high bit (bit
//     4 n + j of hmask[l]) added as 4 and the offset -4 sum(q) the dot's integer start.
// Per call, Q2_K and Q3_K lay out what every row shares: each sub-block's d_x and d_x sum(q), and
// -4 sum(q) per 4 activations. Compiled with -mavx2 -mfma -mf16c; chosen for the AVX2 table
// (FastDotActKernel).
#include <immintrin.h>

#include <cstdint>
#include <vector>

#include "kernels/avx2_intdot-inl.h"
#include "kernels/kernel_table.h"
#include "kernels/kquant_scales-inl.h"
#include "kernels/quant_more.h"

namespace smartgen::kernels::internal::avx2 {
namespace {

// Q4_1 (kFive false: f16 d, f16 m, 16 nibble bytes) or Q5_1 (f16 d, f16 m, u32 qh, nibbles).
template <int R, bool kFive>
void RowsMin(const std::byte* w, std::size_t row_bytes, std::int64_t nb, const ActQ8& x, float* y) {
  constexpr int kBytes = kFive ? 24 : 20, kQs = kFive ? 8 : 4;
  __m256 acc[R];
  float mins[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm256_setzero_ps(), mins[i] = 0.0f;
  for (std::int64_t b = 0; b < nb; ++b) {
    const __m256i xq = Load32(x.q + 32 * b);
    const float dx = x.d[b], xsum = x.sum8[b] * 0.125f;
    for (int i = 0; i < R; ++i) {
      const std::byte* blk = w + i * row_bytes + b * kBytes;
      __builtin_prefetch(blk + kPrefetchRows * row_bytes, 0, 3);
      __m256i v = Nibbles(blk + kQs);
      if constexpr (kFive) {
        std::uint32_t qh;
        std::memcpy(&qh, blk + 4, 4);
        v = _mm256_or_si256(v, HighBits16(qh));
      }
      acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Dot32(v, xq)), _mm256_set1_ps(HalfAt(blk) * dx),
                               acc[i]);
      mins[i] += HalfAt(blk + 2) * xsum;
    }
  }
  for (int i = 0; i < R; ++i) y[i] = Sum8(acc[i]) + mins[i];
}
template <int R>
void RowsQ4_1(const std::byte* w, std::size_t rb, std::int64_t nb, const ActQ8& x, float* y) {
  RowsMin<R, false>(w, rb, nb, x, y);
}
template <int R>
void RowsQ5_1(const std::byte* w, std::size_t rb, std::int64_t nb, const ActQ8& x, float* y) {
  RowsMin<R, true>(w, rb, nb, x, y);
}

// vpshufb's table in both 128-bit lanes: the IQ4 grid's level q at byte q.
__m256i LevelTable() {
  return _mm256_broadcastsi128_si256(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)));
}

// sum(level(nibble) q) over one block of 32, as 8 lanes.
__m256i LevelDot(const std::byte* nibbles, __m256i table, __m256i xq, __m256i xabs) {
  const __m256i v = _mm256_shuffle_epi8(table, Nibbles(nibbles));
  return Dot32(xabs, _mm256_sign_epi8(v, xq));
}

template <int R>
void RowsIq4Nl(const std::byte* w, std::size_t row_bytes, std::int64_t nb, const ActQ8& x,
               float* y) {
  constexpr int kBytes = 18;  // f16 d, 16 nibble bytes
  const __m256i table = LevelTable();
  __m256 acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm256_setzero_ps();
  for (std::int64_t b = 0; b < nb; ++b) {
    const __m256i xq = Load32(x.q + 32 * b), xa = Load32(x.qabs + 32 * b);
    for (int i = 0; i < R; ++i) {
      const std::byte* blk = w + i * row_bytes + b * kBytes;
      __builtin_prefetch(blk + kPrefetchRows * row_bytes, 0, 3);
      const __m256i dot = LevelDot(blk + 2, table, xq, xa);
      acc[i] =
          _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(HalfAt(blk) * x.d[b]), acc[i]);
    }
  }
  for (int i = 0; i < R; ++i) y[i] = Sum8(acc[i]);
}

template <int R>
void RowsIq4Xs(const std::byte* w, std::size_t row_bytes, std::int64_t nsb, const ActQ8& x,
               float* y) {
  constexpr int kBytes = 136;  // f16 d, u16 scales_h, u8 scales_l[4], 128 nibble bytes
  const __m256i table = LevelTable();
  __m256 acc[R][2];  // two chains a row: even and odd sub-blocks
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  for (std::int64_t b = 0; b < nsb; ++b) {
    for (int i = 0; i < R; ++i) {
      const std::byte* blk = w + i * row_bytes + b * kBytes;
      for (int off = 0; off < kBytes; off += 64)
        __builtin_prefetch(blk + kPrefetchRows * row_bytes + off, 0, 3);
      const float d = HalfAt(blk);
      std::uint16_t scales_h;
      std::memcpy(&scales_h, blk + 2, 2);
      const auto* scales_l = reinterpret_cast<const std::uint8_t*>(blk + 4);
      __m256 a[2] = {acc[i][0], acc[i][1]};
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const int ls =
            ((scales_l[j / 2] >> (4 * (j % 2))) & 15) | (((scales_h >> (2 * j)) & 3) << 4);
        const std::int64_t ab = 8 * b + j;  // activation block
        const __m256i dot =
            LevelDot(blk + 8 + 16 * j, table, Load32(x.q + 32 * ab), Load32(x.qabs + 32 * ab));
        a[j & 1] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot),
                            _mm256_set1_ps(d * static_cast<float>(ls - 32) * x.d[ab]), a[j & 1]);
      }
      acc[i][0] = a[0], acc[i][1] = a[1];
    }
  }
  for (int i = 0; i < R; ++i) y[i] = Sum8(_mm256_add_ps(acc[i][0], acc[i][1]));
}

// What every Q2_K / Q3_K row of a call shares, per super-block b: dx16[16 b + k] the d_x of
// sub-block k's activation block, dxsum16[16 b + k] d_x sum_k(q), off4[8 b + a] -4 sum(q) of
// each 4 activations of block a.
struct K23Act {
  const float* dx16;
  const float* dxsum16;
  const std::int32_t* off4;  // 8 lanes per activation block
};

K23Act PrepareK23(const ActQ8& x, std::int64_t nsb) {
  thread_local std::vector<float> floats;
  thread_local std::vector<std::int32_t> offsets;
  const auto n16 = static_cast<std::size_t>(16 * nsb);
  if (floats.size() < 2 * n16) floats.resize(2 * n16);
  if (offsets.size() < 4 * n16) offsets.resize(4 * n16);
  for (std::size_t k = 0; k < n16; ++k) {
    std::int32_t sum = 0;
    for (int l = 0; l < 16; ++l) sum += x.q[16 * k + l];
    floats[k] = x.d[k / 2];
    floats[n16 + k] = x.d[k / 2] * static_cast<float>(sum);
  }
  for (std::size_t a = 0; a < n16 / 2; ++a)
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(offsets.data() + 8 * a),
        _mm256_sub_epi32(_mm256_setzero_si256(), Dot32(_mm256_set1_epi8(4), Load32(x.q + 32 * a))));
  return K23Act{floats.data(), floats.data() + n16, offsets.data()};
}

// One Q2_K (kQ3 false: scales[16], qs[64], f16 d, f16 dmin) or Q3_K row (hmask[32], qs[64],
// scales[12], f16 d).
template <bool kQ3>
float RowK23(const std::byte* w, std::size_t row_bytes, std::int64_t nsb, const ActQ8& x,
             const K23Act& k23) {
  constexpr int kBytes = kQ3 ? 110 : 84, kQs = kQ3 ? 32 : 16;
  const __m256i three = _mm256_set1_epi8(3);
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};  // even and odd planes
  __m256 mins = _mm256_setzero_ps();
  for (std::int64_t b = 0; b < nsb; ++b) {
    const std::byte* blk = w + b * kBytes;
    for (int off = 0; off < kBytes; off += 64)
      __builtin_prefetch(blk + kPrefetchRows * row_bytes + off, 0, 3);
    __m256 scale[2];  // d sc_k d_x of sub-blocks 8 n .. 8 n + 7
    __m256i hmask = _mm256_setzero_si256();
    if constexpr (kQ3) {
      const __m128i s = Q3Scales(blk + 96);
      const __m256 d = _mm256_set1_ps(HalfAt(blk + 108));
      scale[0] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(s)), d);
      scale[1] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(s, 8))), d);
      hmask = Load32(blk);
    } else {
      const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk));
      const __m256 d = _mm256_set1_ps(HalfAt(blk + 80)), dmin = _mm256_set1_ps(HalfAt(blk + 82));
      for (int n = 0; n < 2; ++n) {
        const __m256i s = _mm256_cvtepu8_epi32(n == 0 ? sc : _mm_srli_si128(sc, 8));
        scale[n] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_and_si256(s, _mm256_set1_epi32(15))), d);
        const __m256 m = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(s, 4)), dmin);
        mins = _mm256_fmadd_ps(m, _mm256_loadu_ps(k23.dxsum16 + 16 * b + 8 * n), mins);
      }
    }
    for (int n = 0; n < 2; ++n) {
      const __m256 sd = _mm256_mul_ps(scale[n], _mm256_loadu_ps(k23.dx16 + 16 * b + 8 * n));
      const __m256i qs = Load32(blk + kQs + 32 * n);
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const std::int64_t e = 256 * b + 128 * n + 32 * j;
        __m256i u = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), three);
        __m256i dot;
        if constexpr (kQ3) {
          u = _mm256_or_si256(u, ByteBit(hmask, 4 * n + j, 2));
          dot = _mm256_add_epi32(Dot32(u, Load32(x.q + e)), Load32(k23.off4 + 8 * (e / 32)));
        } else {
          dot = Dot32(u, Load32(x.q + e));
        }
        // Lanes 0-3: sub-block 8 n + 2 j, lanes 4-7: the next one.
        const __m256i pick = _mm256_setr_epi32(2 * j, 2 * j, 2 * j, 2 * j, 2 * j + 1, 2 * j + 1,
                                               2 * j + 1, 2 * j + 1);
        acc[j & 1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_permutevar8x32_ps(sd, pick),
                                     acc[j & 1]);
      }
    }
  }
  return Sum8(_mm256_add_ps(acc[0], acc[1])) - Sum8(mins);
}

template <bool kQ3>
void MatVecK23(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
               std::int64_t r0, std::int64_t r1) {
  const std::int64_t nsb = cols / 256;
  const K23Act k23 = PrepareK23(x, nsb);
  const auto* base = static_cast<const std::byte*>(w);
  for (std::int64_t r = r0; r < r1; ++r)
    y[r] = RowK23<kQ3>(base + r * row_bytes, row_bytes, nsb, x, k23);
}

}  // namespace

// Rows per step as matmul_avx2_intdot.cc chose them: 4 rows sharing each activation load for the
// 32-value block types, whose nibble unpacking is the bottleneck, one after another for the
// super-block ones.
SMARTGEN_AVX2_INTDOT(Q4_1, RowsQ4_1, 32, 4)
SMARTGEN_AVX2_INTDOT(Q5_1, RowsQ5_1, 32, 4)
SMARTGEN_AVX2_INTDOT(Iq4Nl, RowsIq4Nl, 32, 4)
SMARTGEN_AVX2_INTDOT(Iq4Xs, RowsIq4Xs, 256, 1)

void MatVecQ2_KAct(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x,
                   float* y, std::int64_t r0, std::int64_t r1) {
  MatVecK23<false>(w, row_bytes, cols, x, y, r0, r1);
}

void MatVecQ3_KAct(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x,
                   float* y, std::int64_t r0, std::int64_t r1) {
  MatVecK23<true>(w, row_bytes, cols, x, y, r0, r1);
}

}  // namespace smartgen::kernels::internal::avx2
