// Attention kernels (attention.h) written once against the Simd vocabulary of simd_<isa>.h,
// compiled per ISA (attention_avx2.cc, attention_avx512.cc define SMARTGEN_SIMD_NS first).
// This file: the helpers both kernels share (keys in tiles of kKt = kLanes tokens converted to
// f32 once per tile, shared by the GQA group; masks; soft-capping) and the prefill kernel;
// attention_decode_simd-inl.h, included after it, holds the decode kernel (AttendBlocks).
//
// AttendCausal (prefill): a tile of kLanes query tokens per head, transposed so each vector
// holds one value for kLanes queries, with an online softmax (no score matrix). Then
// S^T = K Q^T, the row max and row sum, and the output O^T += V^T P^T are all lane-wise: no
// horizontal reductions in the inner loops.
// Head dims that are not a multiple of kLanes (or too large) take the scalar kernels.
#ifndef SMARTGEN_SIMD_NS
#error "define SMARTGEN_SIMD_NS and include kernels/simd_<isa>.h before this file"
#endif

namespace smartgen::kernels::internal::SMARTGEN_SIMD_NS {
namespace {

using S = Simd;
using V = S::V;
constexpr int L = S::kLanes;
constexpr int kKt = L;  // keys per tile
constexpr int kMaxHeadDim = 256;
constexpr int kMaxGroup = 16;  // query heads per KV head
constexpr float kNegInf = -__builtin_inff();

bool Supported(const AttentionParams& p) {
  return p.head_dim % L == 0 && p.head_dim <= kMaxHeadDim && p.n_q >= 1 && p.n_q <= kMaxGroup;
}

// Rows [t0, t0 + nk) of a block's K or V as f32 [kKt][hd], rows past nk zero. A full f32 tile
// is used in place; anything else is converted or copied into buf.
const float* TileRows(const void* base, KvDType dtype, int hd, std::int64_t t0, int nk,
                      float* buf) {
  if (dtype == KvDType::kF32 && nk == kKt) return static_cast<const float*>(base) + t0 * hd;
  for (int j = 0; j < kKt; ++j) {
    float* dst = buf + j * hd;
    if (j >= nk) {
      for (int c = 0; c < hd; c += L) S::Store(dst + c, S::Zero());
    } else if (dtype == KvDType::kF32) {
      const float* src = static_cast<const float*>(base) + (t0 + j) * hd;
      for (int c = 0; c < hd; c += L) S::Store(dst + c, S::Load(src + c));
    } else {
      const auto* src = static_cast<const std::uint16_t*>(base) + (t0 + j) * hd;
      for (int c = 0; c < hd; c += L) S::Store(dst + c, S::LoadF16(src + c));
    }
  }
  return buf;
}

std::int64_t VisibleTokens(const KvBlockRef& b, std::int64_t q_pos) {
  const std::int64_t n = q_pos - b.first_pos + 1;
  return n < 0 ? 0 : (n > b.n_tokens ? b.n_tokens : n);
}

// The first token of `b` inside q_pos's sliding window (attention.h's WindowStart, which ISA
// files must not call).
std::int64_t FirstInWindow(const AttentionParams& p, const KvBlockRef& b, std::int64_t q_pos) {
  if (p.window <= 0) return 0;
  const std::int64_t n = q_pos - p.window + 1 - b.first_pos;
  return n < 0 ? 0 : (n > b.n_tokens ? b.n_tokens : n);
}

// softcap * tanh(s / softcap), with tanh(y) = 1 - 2 / (e^(2y) + 1) (saturates to +-1 cleanly:
// e^(2y) is +inf or 0 at the ends).
V SoftCap(V s, float softcap) {
  const V e = S::Exp(S::Mul(s, S::Set1(2.0f / softcap)));
  const V t = S::Sub(S::Set1(1.0f), S::Div(S::Set1(2.0f), S::Add(e, S::Set1(1.0f))));
  return S::Mul(t, S::Set1(softcap));
}

// The decode kernels' shared steps (attention_decode_simd-inl.h,
// attention_decode_online_simd-inl.h).

// qs = the group's queries times p.scale, and out zeroed, for nq heads.
void ScaleQueries(const AttentionParams& p, const float* q, float* qs, float* out) {
  const V scale = S::Set1(p.scale);
  for (int h = 0; h < p.n_q; ++h) {
    for (int c = 0; c < p.head_dim; c += L) {
      S::Store(qs + h * p.head_dim + c, S::Mul(S::Load(q + h * p.head_dim + c), scale));
      S::Store(out + h * p.head_dim + c, S::Zero());
    }
  }
}

// One head's scores of a tile: the scaled query qh against the tile's f32 rows kt, kKt partial
// dot products reduced together, soft-capped, keys past nk at -inf. NV = head_dim / kLanes when
// known at compile time (0: at run time).
template <int NV>
V TileScores(const AttentionParams& p, const float* qh, const float* kt, int nk) {
  const int hd = p.head_dim, nv = NV > 0 ? NV : hd / L;
  V part[kKt];
  for (int j = 0; j < kKt; ++j) part[j] = S::Zero();
  for (int v = 0; v < nv; ++v) {
    const V qv = S::Load(qh + v * L);
    for (int j = 0; j < kKt; ++j) part[j] = S::Fma(qv, S::Load(kt + j * hd + v * L), part[j]);
  }
  V s = S::ReduceLanes(part);
  if (p.softcap > 0.0f) s = SoftCap(s, p.softcap);
  if (nk < kKt) s = S::SelectLess(S::Set1(nk - 0.5f), S::Iota(0.0f), S::Set1(kNegInf), s);
  return s;
}

// out[h] /= l[h] and lse[h] = m[h] + log l[h]; a head that saw no key (l = 0) keeps out = 0 and
// gets lse = -inf.
void NormalizeHeads(int hd, int nq, const float* m, const float* l, float* out, float* lse) {
  for (int h = 0; h < nq; ++h) {
    if (l[h] == 0.0f) {
      lse[h] = kNegInf;
      continue;
    }
    const V inv = S::Set1(1.0f / l[h]);
    for (int c = 0; c < hd; c += L) {
      S::Store(out + h * hd + c, S::Mul(S::Load(out + h * hd + c), inv));
    }
    lse[h] = m[h] + __builtin_logf(l[h]);
  }
}

// Output registers a decode kernel's value step may hold (G heads x NV vectors).
constexpr int kPvRegs = L == 16 ? 16 : 8;

// Value row j, vector v, of a tile whose rows start at vt, f16 (converted as loaded) or f32.
template <bool kF16>
V LoadValue(const void* vt, int hd, std::int64_t j, int v) {
  if constexpr (kF16) {
    return S::LoadF16(static_cast<const std::uint16_t*>(vt) + j * hd + v * L);
  } else {
    return S::Load(static_cast<const float*>(vt) + j * hd + v * L);
  }
}

}  // namespace

void AttendCausal(const AttentionParams& p, const float* q, std::int64_t q_stride,
                  std::int64_t n_tokens, std::int64_t first_pos, const KvBlockRef* blocks,
                  std::size_t n_blocks, float* out, std::int64_t out_stride, float* lse) {
  if (!Supported(p)) {
    return scalar::AttendCausal(p, q, q_stride, n_tokens, first_pos, blocks, n_blocks, out,
                                out_stride, lse);
  }
  const int hd = p.head_dim, nq = p.n_q;
  // Per head h: qt[h][d][lane] (scaled queries, transposed) and ot[h][d][lane] (outputs).
  float* qt = ThreadScratch(2, static_cast<std::size_t>(nq) * hd * L);
  float* ot = ThreadScratch(3, static_cast<std::size_t>(nq) * hd * L);
  alignas(64) float kbuf[kKt * kMaxHeadDim], vbuf[kKt * kMaxHeadDim];
  V m[kMaxGroup], l[kMaxGroup];
  const V scale = S::Set1(p.scale), neg_inf = S::Set1(kNegInf);
  for (std::int64_t tq0 = 0; tq0 < n_tokens; tq0 += L) {
    const int nr = static_cast<int>(n_tokens - tq0 < L ? n_tokens - tq0 : L);
    const std::int64_t pos0 = first_pos + tq0, pos_last = pos0 + nr - 1;
    // Query positions relative to pos0; padding lanes repeat the last real query.
    const V q_rel = S::Min(S::Iota(0.0f), S::Set1(static_cast<float>(nr - 1)));
    for (int h = 0; h < nq; ++h) {
      for (int d0 = 0; d0 < hd; d0 += L) {
        V r[L];
        for (int i = 0; i < L; ++i) {
          r[i] =
              i < nr ? S::Mul(S::Load(q + (tq0 + i) * q_stride + h * hd + d0), scale) : S::Zero();
        }
        S::Transpose(r);
        for (int c = 0; c < L; ++c) S::Store(qt + (h * hd + d0 + c) * L, r[c]);
      }
      for (int d = 0; d < hd; ++d) S::Store(ot + (h * hd + d) * L, S::Zero());
      m[h] = neg_inf;
      l[h] = S::Zero();
    }
    // With a sliding window, keys before first_key are outside every query's window, and keys
    // before last_start are outside some.
    const std::int64_t first_key = p.window > 0 ? pos0 - p.window + 1 : 0;
    const std::int64_t last_start = p.window > 0 ? pos_last - p.window + 1 : 0;
    const V window_rel = S::Sub(q_rel, S::Set1(static_cast<float>(p.window - 1)));
    for (std::size_t bi = 0; bi < n_blocks; ++bi) {
      const KvBlockRef& b = blocks[bi];
      for (std::int64_t t0 = 0; t0 < b.n_tokens; t0 += kKt) {
        const std::int64_t kp0 = b.first_pos + t0;
        if (kp0 > pos_last) break;  // this and later keys of the block are in every query's future
        const int nk = static_cast<int>(b.n_tokens - t0 < kKt ? b.n_tokens - t0 : kKt);
        if (kp0 + nk - 1 < first_key) continue;  // before every query's window
        const bool windowed = p.window > 0 && kp0 < last_start;
        const bool masked = nk < kKt || kp0 + nk - 1 > pos0 || windowed;
        const float* kt = TileRows(b.k, p.dtype, hd, t0, nk, kbuf);
        const float* vt = TileRows(b.v, p.dtype, hd, t0, nk, vbuf);
        for (int h = 0; h < nq; ++h) {
          const float* qh = qt + h * hd * L;
          V acc[kKt];
          for (int j = 0; j < kKt; ++j) acc[j] = S::Zero();
          for (int d = 0; d < hd; ++d) {
            const V qv = S::Load(qh + d * L);
            for (int j = 0; j < kKt; ++j) acc[j] = S::Fma(S::Set1(kt[j * hd + d]), qv, acc[j]);
          }
          if (p.softcap > 0.0f) {
            for (int j = 0; j < kKt; ++j) acc[j] = SoftCap(acc[j], p.softcap);
          }
          if (masked) {
            for (int j = 0; j < kKt; ++j) {
              // Key j hides from queries before it; padding keys (j >= nk) from everyone.
              const float k_rel = j < nk ? static_cast<float>(kp0 + j - pos0) : 1e30f;
              acc[j] = S::SelectLess(q_rel, S::Set1(k_rel), neg_inf, acc[j]);
              // ... and from queries whose window starts after it.
              if (windowed) acc[j] = S::SelectLess(S::Set1(k_rel), window_rel, neg_inf, acc[j]);
            }
          }
          V tile_max = acc[0];
          for (int j = 1; j < kKt; ++j) tile_max = S::Max(tile_max, acc[j]);
          const V m_new = S::Max(m[h], tile_max);
          // Rows that have seen no key yet keep m = -inf; shift by 0 there so exp gives 0.
          const V m_use = S::SelectLess(m_new, S::Set1(-3.0e38f), S::Zero(), m_new);
          const V alpha = S::Exp(S::Sub(m[h], m_use));
          V sum = S::Zero();
          for (int j = 0; j < kKt; ++j) {
            acc[j] = S::Exp(S::Sub(acc[j], m_use));
            sum = S::Add(sum, acc[j]);
          }
          l[h] = S::Fma(l[h], alpha, sum);
          m[h] = m_new;
          float* oh = ot + h * hd * L;
          for (int d = 0; d < hd; ++d) {
            V o = S::Mul(S::Load(oh + d * L), alpha);
            for (int j = 0; j < kKt; ++j) o = S::Fma(acc[j], S::Set1(vt[j * hd + d]), o);
            S::Store(oh + d * L, o);
          }
        }
      }
    }
    for (int h = 0; h < nq; ++h) {
      alignas(64) float lb[L], mb[L];
      S::Store(lb, l[h]);
      S::Store(mb, m[h]);
      // 1/l, or 0 for rows without keys (their output is 0).
      const V inv = S::SelectLess(S::Zero(), l[h], S::Div(S::Set1(1.0f), l[h]), S::Zero());
      for (int d0 = 0; d0 < hd; d0 += L) {
        V r[L];
        for (int c = 0; c < L; ++c) r[c] = S::Mul(S::Load(ot + (h * hd + d0 + c) * L), inv);
        S::Transpose(r);
        for (int i = 0; i < nr; ++i) S::Store(out + (tq0 + i) * out_stride + h * hd + d0, r[i]);
      }
      if (lse != nullptr) {
        for (int i = 0; i < nr; ++i) {
          lse[(tq0 + i) * nq + h] = lb[i] > 0.0f ? mb[i] + __builtin_logf(lb[i]) : kNegInf;
        }
      }
    }
  }
}

}  // namespace smartgen::kernels::internal::SMARTGEN_SIMD_NS
