// Matrix kernels (matmul.h) written once against the Simd vocabulary of simd_<isa>.h and
// compiled once per ISA (matmul_avx2.cc, matmul_avx512.cc define SMARTGEN_SIMD_NS first).
//
// MatVec (decode) is memory-bound: each weight row is streamed once, kRows rows per pass
// sharing the loads of x. MatMul (prefill) is a blocked GEMM: for each K block, a panel of NR
// weight rows is dequantized to f32 and transposed once into packed[k][NR] (thread scratch),
// then a kGemmMr x NR register-blocked micro-kernel sweeps every token over it, so F16/BF16/
// Q8_0 weights are converted once per panel and reused by all tokens.
#ifndef SMARTGEN_SIMD_NS
#error "define SMARTGEN_SIMD_NS and include kernels/simd_<isa>.h before this file"
#endif

#include "kernels/row_streams.h"

namespace smartgen::kernels::internal::SMARTGEN_SIMD_NS {
namespace {

using S = Simd;
using V = S::V;
constexpr int L = S::kLanes;
constexpr int kMr = S::kGemmMr;
constexpr int kNv = S::kGemmNv;
constexpr int kNr = kNv * L;         // weight rows per packed panel
constexpr int kQ8Block = 32;         // kQK8_0
constexpr int kQ8Bytes = 34;         // sizeof(BlockQ8_0): f16 scale + 32 int8
constexpr std::int64_t kKc = 256;    // K block of the GEMM (multiple of 32)
constexpr std::int64_t kNc = 512;    // weight rows packed per block (kNc x kKc f32: 512 KiB)
constexpr std::int64_t kMc = 120;    // tokens per block (a multiple of both ISAs\' kGemmMr)
// Below this many tokens (a decode batch) MatMul streams rows like MatVec, each kVecRows rows
// dotted with every token while in L1: packing f32 panels cost a decode step of 4-8 tokens
// twice the time of a single-token step (SmolLM2 F16), more than the GEMM saves.
constexpr std::int64_t kSmallN = 16;
// F32 / F16 / BF16 batches below this many tokens take the small-batch kernel (MatMulSmallPlain),
// i.e. every decode batch (up to 64 sequences) and no prefill micro-batch: against the packed
// GEMM, SmolLM2 F16 decode steps at batch 16 ran 2.4-3.5x faster (an Intel Xeon under load 5-6),
// and on AMD EPYC Zen 5 at batch 64, KV 512, Qwen2.5-0.5B F16 1.03-1.14x (six alternating
// rounds), SmolLM2-135M F16 1.04x, the F32 files level (2026-12-05, docs/RESULTS.md).
constexpr std::int64_t kSmallPlainN = 65;

template <typename T>
T MinOf(T a, T b) {
  return a < b ? a : b;
}

float HalfToFloat(std::uint16_t h) {
  return _cvtsh_ss(h);
}

// The hardware prefetcher loses track of kVecRows interleaved rows that are not cache-line
// aligned, so the GEMV prefetches the bytes it will read kPrefetchRows rows later. Into every
// cache level (locality 3, prefetcht0): the non-temporal hint (prefetchnta) halved the GEMV's
// streaming rate on a Xeon with AVX-512 (6.1 against 12.3 GB/s on one core, SmolLM2's decode
// weights), while t0 reaches the plain streaming-read rate there.
constexpr int kPrefetchRows = 12;
void PrefetchAhead(const std::byte* p, std::int64_t offset, std::size_t row_bytes) {
  __builtin_prefetch(p + offset + kPrefetchRows * row_bytes, 0, 3);
}

// How a weight row's elements are loaded as f32. k is a multiple of L for Load.
// kSeqPrefetchBytes: how far ahead DotRowSeq prefetches a plain type's rows (kernel_table.h).
struct KindF32 {
  static constexpr int kBytes = 4;  // per element (Q8_0: per int8, ignoring scales)
  static constexpr std::size_t kSeqPrefetchBytes = kPlainGemvPrefetchBytes;
  static V Load(const std::byte* row, std::int64_t k) {
    return S::Load(reinterpret_cast<const float*>(row) + k);
  }
  static float Scalar(const std::byte* row, std::int64_t k) {
    return reinterpret_cast<const float*>(row)[k];
  }
};
struct KindF16 {
  static constexpr int kBytes = 2;  // per element (Q8_0: per int8, ignoring scales)
  static constexpr std::size_t kSeqPrefetchBytes = kGemvPrefetchBytes;  // one stream
  static V Load(const std::byte* row, std::int64_t k) {
    return S::LoadF16(reinterpret_cast<const std::uint16_t*>(row) + k);
  }
  static float Scalar(const std::byte* row, std::int64_t k) {
    return HalfToFloat(reinterpret_cast<const std::uint16_t*>(row)[k]);
  }
};
struct KindBF16 {
  static constexpr int kBytes = 2;  // per element (Q8_0: per int8, ignoring scales)
  static constexpr std::size_t kSeqPrefetchBytes = kPlainGemvPrefetchBytes;
  static V Load(const std::byte* row, std::int64_t k) {
    return S::LoadBf16(reinterpret_cast<const std::uint16_t*>(row) + k);
  }
  static float Scalar(const std::byte* row, std::int64_t k) {
    const std::uint32_t bits =
        static_cast<std::uint32_t>(reinterpret_cast<const std::uint16_t*>(row)[k]) << 16;
    float f;
    __builtin_memcpy(&f, &bits, 4);
    return f;
  }
};
struct KindQ8_0 {
  static constexpr int kBytes = 1;  // per element (Q8_0: per int8, ignoring scales)
  // q * d is exact in f32 (8-bit times 11-bit significands), as in ggml's dequantization.
  static V Load(const std::byte* row, std::int64_t k) {
    const std::byte* blk = row + (k / kQ8Block) * kQ8Bytes;
    std::uint16_t d;
    __builtin_memcpy(&d, blk, 2);
    const auto* qs = reinterpret_cast<const std::int8_t*>(blk + 2) + k % kQ8Block;
    return S::Mul(S::LoadI8(qs), S::Set1(HalfToFloat(d)));
  }
  static float Scalar(const std::byte* row, std::int64_t k) {
    const std::byte* blk = row + (k / kQ8Block) * kQ8Bytes;
    std::uint16_t d;
    __builtin_memcpy(&d, blk, 2);
    return static_cast<float>(reinterpret_cast<const std::int8_t*>(blk + 2)[k % kQ8Block]) *
           HalfToFloat(d);
  }
};

#include "kernels/quant_simd-inl.h"
#include "kernels/quant_more_simd-inl.h"

// ---- MatVec -------------------------------------------------------------------------------

// y[r..r+R) for R rows of a plain (non-block) type; tail columns are handled scalar.
template <typename Kind, int R>
void DotRows(const std::byte* w, std::size_t row_bytes, std::int64_t cols, const float* x,
             float* y) {
  V acc[R];
  for (int i = 0; i < R; ++i) acc[i] = S::Zero();
  std::int64_t k = 0;
  for (; k + L <= cols; k += L) {
    const V xv = S::Load(x + k);
    for (int i = 0; i < R; ++i) {
      PrefetchAhead(w + i * row_bytes, k * Kind::kBytes, row_bytes);
      acc[i] = S::Fma(Kind::Load(w + i * row_bytes, k), xv, acc[i]);
    }
  }
  for (int i = 0; i < R; ++i) {
    float s = S::ReduceAdd(acc[i]);
    for (std::int64_t kk = k; kk < cols; ++kk) s += Kind::Scalar(w + i * row_bytes, kk) * x[kk];
    y[i] = s;
  }
}

// Q8_0: per 32-block, sum q * x in f32, then scale by d once.
template <int R>
void DotRowsQ8(const std::byte* w, std::size_t row_bytes, std::int64_t cols, const float* x,
               float* y) {
  V acc[R];
  for (int i = 0; i < R; ++i) acc[i] = S::Zero();
  const std::int64_t nb = cols / kQ8Block;
  for (std::int64_t b = 0; b < nb; ++b) {
    V xv[kQ8Block / L];
    for (int j = 0; j < kQ8Block / L; ++j) xv[j] = S::Load(x + b * kQ8Block + j * L);
    for (int i = 0; i < R; ++i) {
      const std::byte* blk = w + i * row_bytes + b * kQ8Bytes;
      PrefetchAhead(blk, 0, row_bytes);
      std::uint16_t d;
      __builtin_memcpy(&d, blk, 2);
      const auto* qs = reinterpret_cast<const std::int8_t*>(blk + 2);
      V part = S::Mul(S::LoadI8(qs), xv[0]);
      for (int j = 1; j < kQ8Block / L; ++j) part = S::Fma(S::LoadI8(qs + j * L), xv[j], part);
      acc[i] = S::Fma(part, S::Set1(HalfToFloat(d)), acc[i]);
    }
  }
  for (int i = 0; i < R; ++i) y[i] = S::ReduceAdd(acc[i]);
}

// y[0..R) for R rows starting at w.
template <typename Kind, int R>
void RowDots(const std::byte* w, std::size_t row_bytes, std::int64_t cols, const float* x,
             float* y) {
  if constexpr (std::is_same_v<Kind, KindQ8_0>) {
    DotRowsQ8<R>(w, row_bytes, cols, x, y);
  } else if constexpr (std::is_same_v<Kind, KindQ4_0>) {
    DotRowsQ4_0<R>(w, row_bytes, cols, x, y);
  } else if constexpr (std::is_same_v<Kind, KindQ4_K>) {
    DotRowsQ4_K<R>(w, row_bytes, cols, x, y);
  } else if constexpr (std::is_same_v<Kind, KindQ6_K>) {
    DotRowsQ6_K<R>(w, row_bytes, cols, x, y);
  } else if constexpr (std::is_same_v<Kind, KindQ5_K>) {
    DotRowsQ5_K<R>(w, row_bytes, cols, x, y);
  } else if constexpr (std::is_same_v<Kind, KindQ3_K>) {
    DotRowsQ3_K<R>(w, row_bytes, cols, x, y);
  } else if constexpr (std::is_same_v<Kind, KindQ2_K>) {
    DotRowsQ2_K<R>(w, row_bytes, cols, x, y);
  } else if constexpr (std::is_same_v<Kind, KindIQ4_NL>) {
    DotRowsIq4<false, R>(w, row_bytes, cols, x, y);
  } else if constexpr (std::is_same_v<Kind, KindIQ4_XS>) {
    DotRowsIq4<true, R>(w, row_bytes, cols, x, y);
  } else if constexpr (std::is_same_v<Kind, KindQ4_1> || std::is_same_v<Kind, KindQ5_0> ||
                       std::is_same_v<Kind, KindQ5_1>) {
    DotRowsLegacy<Kind, R>(w, row_bytes, cols, x, y);
  } else {
    DotRows<Kind, R>(w, row_bytes, cols, x, y);
  }
}

// Rows per step of the exact quantized GEMVs and the small-batch kernel (kVecRows streams share
// each x load); the plain types' GEMV reads one row at a time (DotRowSeq).
constexpr int kVecRows = 8;

// A plain type's GEMV reads its rows one after another: one sequential stream per thread (F16:
// two, row_streams.h), which the hardware prefetcher follows, with a software prefetch `ahead`
// bytes ahead of it (Kind::kSeqPrefetchBytes in one stream). On an
// AMD EPYC Zen 5 this decoded the Qwen2.5-0.5B shape 1.2-1.3x (F16) and 1.15-1.2x (F32) faster
// than kVecRows interleaved rows sharing each x load (docs/RESULTS.md, issue 14): the rows of a
// decode GEMV are 1-20 KiB, so the interleaved kernel keeps 8 streams a row apart in flight.
template <typename Kind>
float DotRowSeq(const std::byte* w, std::int64_t cols, const float* x, std::size_t ahead) {
  constexpr int kStepBytes = 4 * L * Kind::kBytes;
  V a0 = S::Zero(), a1 = S::Zero(), a2 = S::Zero(), a3 = S::Zero();
  std::int64_t k = 0;
  for (; k + 4 * L <= cols; k += 4 * L) {
    const std::byte* p = w + k * Kind::kBytes + ahead;
    for (int off = 0; off < kStepBytes; off += 64) __builtin_prefetch(p + off, 0, 3);
    a0 = S::Fma(Kind::Load(w, k), S::Load(x + k), a0);
    a1 = S::Fma(Kind::Load(w, k + L), S::Load(x + k + L), a1);
    a2 = S::Fma(Kind::Load(w, k + 2 * L), S::Load(x + k + 2 * L), a2);
    a3 = S::Fma(Kind::Load(w, k + 3 * L), S::Load(x + k + 3 * L), a3);
  }
  for (; k + L <= cols; k += L) a0 = S::Fma(Kind::Load(w, k), S::Load(x + k), a0);
  float s = S::ReduceAdd(S::Add(S::Add(a0, a1), S::Add(a2, a3)));
  for (; k < cols; ++k) s += Kind::Scalar(w, k) * x[k];
  return s;
}

template <typename Kind>
void MatVecKind(const void* w, std::size_t row_bytes, std::int64_t cols, const float* x, float* y,
                std::int64_t r0, std::int64_t r1) {
  const auto* base = static_cast<const std::byte*>(w);
  if constexpr (std::is_same_v<Kind, KindF32> || std::is_same_v<Kind, KindF16> ||
                std::is_same_v<Kind, KindBF16>) {
    if constexpr (std::is_same_v<Kind, KindF16>) {
      const std::size_t ahead = StreamPrefetchBytes(r1 - r0, row_bytes);
      ForEachRowTwoStreams(r0, r1, row_bytes, [&](std::int64_t r) {
        y[r] = DotRowSeq<Kind>(base + r * row_bytes, cols, x, ahead);
      });
    } else {  // F32 read 0.95-0.97x as fast as two streams
      for (std::int64_t r = r0; r < r1; ++r) {
        y[r] = DotRowSeq<Kind>(base + r * row_bytes, cols, x, Kind::kSeqPrefetchBytes);
      }
    }
    return;
  }
  std::int64_t r = r0;
  for (; r + kVecRows <= r1; r += kVecRows) {
    RowDots<Kind, kVecRows>(base + r * row_bytes, row_bytes, cols, x, y + r);
  }
  for (; r < r1; ++r) RowDots<Kind, 1>(base + r * row_bytes, row_bytes, cols, x, y + r);
}

// ---- MatMul -------------------------------------------------------------------------------

// packed[k][kNr] = f32 W[rp + j][k0 + k] for k < kb, j < nr; rows j >= nr are zero.
template <typename Kind>
void PackPanel(const std::byte* w, std::size_t row_bytes, std::int64_t rp, int nr, std::int64_t k0,
               std::int64_t kb, float* packed) {
  std::int64_t k = 0;
  for (; k + L <= kb; k += L) {
    for (int v = 0; v < kNv; ++v) {
      V t[L];
      for (int j = 0; j < L; ++j) {
        const int row = v * L + j;
        t[j] = row < nr ? Kind::Load(w + (rp + row) * row_bytes, k0 + k) : S::Zero();
      }
      S::Transpose(t);
      for (int j = 0; j < L; ++j) S::Store(packed + (k + j) * kNr + v * L, t[j]);
    }
  }
  for (; k < kb; ++k) {
    for (int j = 0; j < kNr; ++j) {
      packed[k * kNr + j] = j < nr ? Kind::Scalar(w + (rp + j) * row_bytes, k0 + k) : 0.0f;
    }
  }
}

// y[i][0..nr) (+)= sum_k x[i][k] * packed[k][0..nr) for i < M tokens (x row stride ldx).
template <int M>
void MicroKernel(const float* x, std::int64_t ldx, const float* packed, std::int64_t kb, float* y,
                 std::int64_t ldy, int nr, bool accumulate) {
  V acc[M][kNv];
  for (int i = 0; i < M; ++i) {
    for (int v = 0; v < kNv; ++v) acc[i][v] = S::Zero();
  }
  for (std::int64_t k = 0; k < kb; ++k) {
    V b[kNv];
    for (int v = 0; v < kNv; ++v) b[v] = S::Load(packed + k * kNr + v * L);
    for (int i = 0; i < M; ++i) {
      const V a = S::Set1(x[i * ldx + k]);
      for (int v = 0; v < kNv; ++v) acc[i][v] = S::Fma(a, b[v], acc[i][v]);
    }
  }
  for (int i = 0; i < M; ++i) {
    float* yi = y + i * ldy;
    for (int v = 0; v < kNv; ++v) {
      const int n_here = nr - v * L;
      if (n_here >= L) {
        S::Store(yi + v * L, accumulate ? S::Add(S::Load(yi + v * L), acc[i][v]) : acc[i][v]);
      } else if (n_here > 0) {
        const V old = accumulate ? S::LoadN(yi + v * L, n_here) : S::Zero();
        S::StoreN(yi + v * L, S::Add(old, acc[i][v]), n_here);
      }
    }
  }
}

template <int M>
void MicroKernelTail(int m, const float* x, std::int64_t ldx, const float* packed, std::int64_t kb,
                     float* y, std::int64_t ldy, int nr, bool accumulate) {
  if constexpr (M > 0) {
    if (m == M) {
      MicroKernel<M>(x, ldx, packed, kb, y, ldy, nr, accumulate);
    } else {
      MicroKernelTail<M - 1>(m, x, ldx, packed, kb, y, ldy, nr, accumulate);
    }
  }
}

// ---- Small batches of plain-type rows (F32, F16, BF16) ------------------------------------

// Y[t][r] for R rows x T tokens (R * T == L) in registers: each weight vector is loaded and
// converted once for the T tokens, and the L dot products are reduced together (ReduceLanes),
// so a row is widened to f32 once per token group, not once per token. kStream: the first
// token group of a row block, which reads the rows from memory and prefetches ahead (once per
// cache line).
template <typename Kind, int R, int T, bool kStream>
void DotTile(const std::byte* w, std::size_t row_bytes, std::int64_t cols, const float* x, float* y,
             std::int64_t ldy) {
  static_assert(R * T == L);
  constexpr std::int64_t kLineElems = 64 / Kind::kBytes;
  V acc[R * T];
  for (int i = 0; i < R * T; ++i) acc[i] = S::Zero();
  for (std::int64_t k = 0; k < cols; k += L) {
    V xv[T];
    for (int t = 0; t < T; ++t) xv[t] = S::Load(x + t * cols + k);
    for (int r = 0; r < R; ++r) {
      if (kStream && k % kLineElems == 0) {
        PrefetchAhead(w + r * row_bytes, k * Kind::kBytes, row_bytes);
      }
      const V wv = Kind::Load(w + r * row_bytes, k);
      for (int t = 0; t < T; ++t) acc[t * R + r] = S::Fma(wv, xv[t], acc[t * R + r]);
    }
  }
  alignas(64) float sums[L];
  S::Store(sums, S::ReduceLanes(acc));
  for (int t = 0; t < T; ++t) {
    for (int r = 0; r < R; ++r) y[t * ldy + r] = sums[t * R + r];
  }
}

// The L rows at w times the T tokens at x, in tiles of L / T rows.
template <typename Kind, int T>
void DotBlock(const std::byte* w, std::size_t row_bytes, std::int64_t cols, const float* x,
              float* y, std::int64_t ldy, bool stream) {
  for (int rr = 0; rr < L; rr += L / T) {
    if (stream) {
      DotTile<Kind, L / T, T, true>(w + rr * row_bytes, row_bytes, cols, x, y + rr, ldy);
    } else {
      DotTile<Kind, L / T, T, false>(w + rr * row_bytes, row_bytes, cols, x, y + rr, ldy);
    }
  }
}

// Rows [r0, r1) of W times n < kSmallPlainN tokens: blocks of L rows (in L1 / L2 while every token
// group passes over them), token groups of 4, 2, 1 (groups of 8 ran slower: 319 against 232 us
// for 1536 x 576 F16 x 16 tokens on one core). Needs cols % L == 0; rows past the last full
// block take the token-by-token path.
template <typename Kind>
std::int64_t MatMulSmallPlain(const std::byte* base, std::size_t row_bytes, std::int64_t cols,
                              const float* x, std::int64_t n, float* y, std::int64_t ldy,
                              std::int64_t r0, std::int64_t r1) {
  std::int64_t r = r0;
  for (; r + L <= r1; r += L) {
    const std::byte* wb = base + r * row_bytes;
    std::int64_t t = 0;
    for (; t + 4 <= n; t += 4)
      DotBlock<Kind, 4>(wb, row_bytes, cols, x + t * cols, y + t * ldy + r, ldy, t == 0);
    for (; t + 2 <= n; t += 2)
      DotBlock<Kind, 2>(wb, row_bytes, cols, x + t * cols, y + t * ldy + r, ldy, t == 0);
    for (; t < n; ++t)
      DotBlock<Kind, 1>(wb, row_bytes, cols, x + t * cols, y + t * ldy + r, ldy, t == 0);
  }
  return r;
}

template <typename Kind>
void MatMulKind(const void* w, std::size_t row_bytes, std::int64_t cols, const float* x,
                std::int64_t n, float* y, std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  const auto* base = static_cast<const std::byte*>(w);
  constexpr bool kPlain = std::is_same_v<Kind, KindF32> || std::is_same_v<Kind, KindF16> ||
                          std::is_same_v<Kind, KindBF16>;
  if constexpr (kPlain) {
    if (n < kSmallPlainN && cols % L == 0) {
      r0 = MatMulSmallPlain<Kind>(base, row_bytes, cols, x, n, y, ldy, r0, r1);
    }
  }
  if (n < kSmallN || (kPlain && n < kSmallPlainN)) {
    // Too few tokens to pay for packing: stream kVecRows rows at a time and dot them with
    // every token while they are in L1.
    float tmp[kVecRows];
    std::int64_t r = r0;
    for (; r + kVecRows <= r1; r += kVecRows) {
      for (std::int64_t t = 0; t < n; ++t) {
        RowDots<Kind, kVecRows>(base + r * row_bytes, row_bytes, cols, x + t * cols, tmp);
        for (int i = 0; i < kVecRows; ++i) y[t * ldy + r + i] = tmp[i];
      }
    }
    for (; r < r1; ++r) {
      for (std::int64_t t = 0; t < n; ++t) {
        RowDots<Kind, 1>(base + r * row_bytes, row_bytes, cols, x + t * cols, y + t * ldy + r);
      }
    }
    return;
  }
  // Goto-style blocking: kNc weight rows x kKc columns are packed (L2), then token blocks of
  // kMc rows of x (L2) sweep every packed panel (L1) with the micro-kernel. Each output element
  // is loaded and stored once per K block.
  float* packed = ThreadScratch(1, static_cast<std::size_t>(kNc * kKc));
  for (std::int64_t jc = r0; jc < r1; jc += kNc) {
    const std::int64_t jc_end = MinOf(r1, jc + kNc);
    for (std::int64_t k0 = 0; k0 < cols; k0 += kKc) {
      const std::int64_t kb = MinOf(kKc, cols - k0);
      for (std::int64_t rp = jc; rp < jc_end; rp += kNr) {
        const int nr = static_cast<int>(MinOf<std::int64_t>(kNr, jc_end - rp));
        PackPanel<Kind>(base, row_bytes, rp, nr, k0, kb, packed + (rp - jc) * kKc);
      }
      for (std::int64_t t0 = 0; t0 < n; t0 += kMc) {
        const std::int64_t t_end = MinOf(n, t0 + kMc);
        for (std::int64_t rp = jc; rp < jc_end; rp += kNr) {
          const int nr = static_cast<int>(MinOf<std::int64_t>(kNr, jc_end - rp));
          const float* panel = packed + (rp - jc) * kKc;
          std::int64_t t = t0;
          for (; t + kMr <= t_end; t += kMr) {
            MicroKernel<kMr>(x + t * cols + k0, cols, panel, kb, y + t * ldy + rp, ldy, nr, k0 > 0);
          }
          if (t < t_end) {
            MicroKernelTail<kMr - 1>(static_cast<int>(t_end - t), x + t * cols + k0, cols, panel,
                                     kb, y + t * ldy + rp, ldy, nr, k0 > 0);
          }
        }
      }
    }
  }
}

}  // namespace

#define SMARTGEN_MATMUL_KIND(Name)                                                              \
  void MatVec##Name(const void* w, std::size_t rb, std::int64_t c, const float* x, float* y,    \
                    std::int64_t r0, std::int64_t r1) {                                         \
    MatVecKind<Kind##Name>(w, rb, c, x, y, r0, r1);                                             \
  }                                                                                             \
  void MatMul##Name(const void* w, std::size_t rb, std::int64_t c, const float* x,              \
                    std::int64_t n, float* y, std::int64_t ldy, std::int64_t r0,                \
                    std::int64_t r1) {                                                          \
    MatMulKind<Kind##Name>(w, rb, c, x, n, y, ldy, r0, r1);                                     \
  }
SMARTGEN_MATMUL_KIND(F32)
SMARTGEN_MATMUL_KIND(F16)
SMARTGEN_MATMUL_KIND(BF16)
SMARTGEN_MATMUL_KIND(Q8_0)
SMARTGEN_MATMUL_KIND(Q4_0)
SMARTGEN_MATMUL_KIND(Q4_K)
SMARTGEN_MATMUL_KIND(Q6_K)
SMARTGEN_MATMUL_KIND(Q4_1)
SMARTGEN_MATMUL_KIND(Q5_0)
SMARTGEN_MATMUL_KIND(Q5_1)
SMARTGEN_MATMUL_KIND(Q2_K)
SMARTGEN_MATMUL_KIND(Q3_K)
SMARTGEN_MATMUL_KIND(Q5_K)
SMARTGEN_MATMUL_KIND(IQ4_NL)
SMARTGEN_MATMUL_KIND(IQ4_XS)
#undef SMARTGEN_MATMUL_KIND

}  // namespace smartgen::kernels::internal::SMARTGEN_SIMD_NS
