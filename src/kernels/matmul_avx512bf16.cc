// BF16 x BF16 GEMV and GEMM with AVX512-BF16 (vdpbf16ps), behind kernels::SetFastDot
// (matmul.h): the activations are rounded to bf16 (nearest even), then every pair of weights is
// one lane of a pairwise dot-accumulate into f32. Twins: scalar::MatVecBF16Bf16 and, token by
// token, scalar::MatMulBF16Bf16 (fast_dot.cc). Compiled with -mavx512bf16; chosen only when the
// CPU has it (FastDotKernel, FastDotMulKernel).
#include <immintrin.h>

#include <cstdint>

#include "kernels/kernel_table.h"

namespace smartgen::kernels::internal::avx512bf16 {
namespace {

template <int R>
void Rows(const std::byte* w, std::size_t row_bytes, std::int64_t cols, const __m512bh* xb,
          float* y) {
  __m512 acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
  for (std::int64_t k = 0; k < cols / 32; ++k) {
    const __m512bh xv = xb[k];
    for (int i = 0; i < R; ++i) {
      const std::byte* p = w + i * row_bytes + k * 64;
      __builtin_prefetch(p + kGemvPrefetchBytes, 0, 3);
      acc[i] = _mm512_dpbf16_ps(acc[i], reinterpret_cast<__m512bh>(_mm512_loadu_si512(p)), xv);
    }
  }
  for (int i = 0; i < R; ++i) y[i] = _mm512_reduce_add_ps(acc[i]);
}

// ---- GEMM (prefill, larger decode batches) --------------------------------------------------
// Goto-style blocking as the f32 GEMM (matmul_simd-inl.h): kNc rows x kKc columns of weights are
// packed as column pairs, [kKc / 2][kNr] 32-bit bf16 pairs (one vector: one column pair of 16
// rows), and a micro-kernel of kMr tokens x 2 vectors adds vdpbf16ps(weight pairs, broadcast
// activation pair) over the block: 32 multiply-adds per instruction where the f32 GEMM's FMA has
// 16, and half the packed bytes.
constexpr int kNr = 32;
constexpr int kMr = 12;
constexpr std::int64_t kKc = 256;
constexpr std::int64_t kNc = 512;
constexpr std::int64_t kMc = 120;
// Fewer tokens than this take the f32 kernels (avx512::MatMulBF16: its small-batch path reads
// the weights once for all tokens; packing would cost more than it saves).
constexpr std::int64_t kMinTokens = 32;

// (No <algorithm> here: an ISA file must not emit inline library code scalar files share.)
std::int64_t MinOf(std::int64_t a, std::int64_t b) { return a < b ? a : b; }

// Transposes a 16 x 16 matrix of 32-bit elements held as 16 rows.
void Transpose16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  // r[4 i + j], 128-bit lane L: column 4 L + j of rows 4 i .. 4 i + 3.
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  // Column 4 L + j is lane L of r[j], r[4 + j], r[8 + j], r[12 + j].
  for (int j = 0; j < 4; ++j) {
    const __m512i p = _mm512_shuffle_i32x4(r[j], r[4 + j], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i q = _mm512_shuffle_i32x4(r[j], r[4 + j], _MM_SHUFFLE(3, 2, 3, 2));
    const __m512i u = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i v = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], _MM_SHUFFLE(3, 2, 3, 2));
    t[j] = _mm512_shuffle_i32x4(p, u, _MM_SHUFFLE(2, 0, 2, 0));
    t[4 + j] = _mm512_shuffle_i32x4(p, u, _MM_SHUFFLE(3, 1, 3, 1));
    t[8 + j] = _mm512_shuffle_i32x4(q, v, _MM_SHUFFLE(2, 0, 2, 0));
    t[12 + j] = _mm512_shuffle_i32x4(q, v, _MM_SHUFFLE(3, 1, 3, 1));
  }
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}

// packed[p][j] = the bf16 pair of columns k0 + 2 p, k0 + 2 p + 1 of row rp + j, for p < kb / 2 and
// j < kNr; rows j >= nr are zero. kb % 32 == 0.
void PackPanel(const std::byte* w, std::size_t row_bytes, std::int64_t rp, int nr, std::int64_t k0,
               std::int64_t kb, std::uint32_t* packed) {
  for (int h = 0; h < kNr; h += 16) {
    for (std::int64_t pb = 0; pb < kb / 2; pb += 16) {
      __m512i t[16];
      for (int i = 0; i < 16; ++i) {
        t[i] = h + i < nr ? _mm512_loadu_si512(w + (rp + h + i) * row_bytes + (k0 + 2 * pb) * 2)
                          : _mm512_setzero_si512();
      }
      Transpose16(t);
      for (int j = 0; j < 16; ++j) _mm512_store_si512(packed + (pb + j) * kNr + h, t[j]);
    }
  }
}

// y[i][0..nr) (+)= rows of the panel times tokens i < M: xp[i * ldx + p] is token i's bf16 pair p.
template <int M>
void MicroKernel(const std::uint32_t* xp, std::int64_t ldx, const std::uint32_t* packed,
                 std::int64_t pairs, float* y, std::int64_t ldy, int nr, bool accumulate) {
  __m512 acc[M][2];
  for (int i = 0; i < M; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (std::int64_t p = 0; p < pairs; ++p) {
    const auto b0 = reinterpret_cast<__m512bh>(_mm512_load_si512(packed + p * kNr));
    const auto b1 = reinterpret_cast<__m512bh>(_mm512_load_si512(packed + p * kNr + 16));
    for (int i = 0; i < M; ++i) {
      const auto a = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(xp[i * ldx + p])));
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], b0, a);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], b1, a);
    }
  }
  const __mmask16 m0 = nr >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << nr) - 1);
  const __mmask16 m1 = nr >= 32 ? 0xFFFF : nr <= 16 ? 0 : static_cast<__mmask16>((1u << (nr - 16)) - 1);
  for (int i = 0; i < M; ++i) {
    float* yi = y + i * ldy;
    if (accumulate) {
      acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_maskz_loadu_ps(m0, yi));
      acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_maskz_loadu_ps(m1, yi + 16));
    }
    _mm512_mask_storeu_ps(yi, m0, acc[i][0]);
    _mm512_mask_storeu_ps(yi + 16, m1, acc[i][1]);
  }
}

template <int M>
void MicroKernelTail(int m, const std::uint32_t* xp, std::int64_t ldx, const std::uint32_t* packed,
                     std::int64_t pairs, float* y, std::int64_t ldy, int nr, bool accumulate) {
  if constexpr (M > 0) {
    if (m == M) return MicroKernel<M>(xp, ldx, packed, pairs, y, ldy, nr, accumulate);
    MicroKernelTail<M - 1>(m, xp, ldx, packed, pairs, y, ldy, nr, accumulate);
  }
}

}  // namespace

void MatMulBF16(const void* w, std::size_t row_bytes, std::int64_t cols, const float* x,
                std::int64_t n, float* y, std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  if (n < kMinTokens || cols % 32 != 0) return avx512::MatMulBF16(w, row_bytes, cols, x, n, y, ldy, r0, r1);
  // Every token's activations as bf16 pairs, [n][cols / 2], once per call.
  const std::int64_t ldx = cols / 2;
  auto* xp = reinterpret_cast<std::uint32_t*>(ThreadScratch(4, static_cast<std::size_t>(n * ldx)));
  for (std::int64_t t = 0; t < n; ++t) {
    for (std::int64_t k = 0; k < cols; k += 32) {
      const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + t * cols + k + 16), _mm512_loadu_ps(x + t * cols + k));
      _mm512_storeu_si512(xp + t * ldx + k / 2, reinterpret_cast<__m512i>(v));
    }
  }
  auto* packed = reinterpret_cast<std::uint32_t*>(ThreadScratch(1, static_cast<std::size_t>(kNc * kKc / 2)));
  const auto* base = static_cast<const std::byte*>(w);
  for (std::int64_t jc = r0; jc < r1; jc += kNc) {
    const std::int64_t jc_end = MinOf(r1, jc + kNc);
    for (std::int64_t k0 = 0; k0 < cols; k0 += kKc) {
      const std::int64_t kb = MinOf(kKc, cols - k0);
      for (std::int64_t rp = jc; rp < jc_end; rp += kNr) {
        const int nr = static_cast<int>(MinOf(kNr, jc_end - rp));
        PackPanel(base, row_bytes, rp, nr, k0, kb, packed + (rp - jc) * (kKc / 2));
      }
      for (std::int64_t t0 = 0; t0 < n; t0 += kMc) {
        const std::int64_t t_end = MinOf(n, t0 + kMc);
        for (std::int64_t rp = jc; rp < jc_end; rp += kNr) {
          const int nr = static_cast<int>(MinOf(kNr, jc_end - rp));
          const std::uint32_t* panel = packed + (rp - jc) * (kKc / 2);
          const std::uint32_t* xk = xp + k0 / 2;
          std::int64_t t = t0;
          for (; t + kMr <= t_end; t += kMr) {
            MicroKernel<kMr>(xk + t * ldx, ldx, panel, kb / 2, y + t * ldy + rp, ldy, nr, k0 > 0);
          }
          if (t < t_end) {
            MicroKernelTail<kMr - 1>(static_cast<int>(t_end - t), xk + t * ldx, ldx, panel, kb / 2,
                                     y + t * ldy + rp, ldy, nr, k0 > 0);
          }
        }
      }
    }
  }
}

void MatVecBF16(const void* w, std::size_t row_bytes, std::int64_t cols, const float* x, float* y,
                std::int64_t r0, std::int64_t r1) {
  // x in bf16, 32 per vector (cols % 32 == 0 on this path: MakeSegment checks).
  auto* xb = reinterpret_cast<__m512bh*>(ThreadScratch(4, static_cast<std::size_t>(cols / 2 + 16)));
  for (std::int64_t k = 0; k < cols / 32; ++k) {
    xb[k] = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + k * 32 + 16), _mm512_loadu_ps(x + k * 32));
  }
  const auto* base = static_cast<const std::byte*>(w);
  // One row after another (matmul_simd-inl.h, DotRowSeq): Qwen2.5-0.5B BF16 decoded 1.1-1.2x
  // faster so than with 8 rows interleaved on an AMD EPYC Zen 5.
  for (std::int64_t r = r0; r < r1; ++r) Rows<1>(base + r * row_bytes, row_bytes, cols, xb, y + r);
}

}  // namespace smartgen::kernels::internal::avx512bf16
