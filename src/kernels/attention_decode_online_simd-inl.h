// The decode attention kernel in one pass with an online softmax, for head dims whose K and V
// halves of a block are each whole pages (128 dims of f16 in 16-token blocks): there it reads each
// block's K then V rows back to back, in address order, which measured faster than the three-pass
// kernel of attention_decode_simd-inl.h that reads all K halves, then all V halves
// (docs/RESULTS.md, "Decode attention in three passes"). Included after attention_simd-inl.h, whose
// helpers it uses.
#ifndef SMARTGEN_SIMD_NS
#error "define SMARTGEN_SIMD_NS and include kernels/attention_simd-inl.h before this file"
#endif

namespace smartgen::kernels::internal::SMARTGEN_SIMD_NS {
namespace {

// The kernel streams each block once from memory (a decode batch at long context reads
// every sequence's KV per step: memory-bound). A block's K and V are each one short contiguous
// run (2 KiB at 16 tokens x 64 dims f16, one 4 KiB page per block in kv::BlockPool), too short
// for the hardware prefetcher to ramp up on, so the kernel prefetches the block
// kOnlinePrefetchBlocks ahead of the one it works on, into L2 (prefetcht2). Measured on one core
// streaming 96 MiB of f16 KV (BM_AttendBlocksStream, Xeon, load 6-7): 7.0 GB/s without, 8.0 with
// prefetcht0 3 or 8 blocks ahead, 8.5-8.8 with prefetcht2 8 ahead.
constexpr std::size_t kOnlinePrefetchBlocks = 8;
void PrefetchBlock(const KvBlockRef& b, std::size_t row_bytes) {
  const std::size_t bytes = row_bytes * static_cast<std::size_t>(b.n_tokens);
  const auto* k = static_cast<const char*>(b.k);
  const auto* v = static_cast<const char*>(b.v);
  for (std::size_t off = 0; off < bytes; off += 64) {
    __builtin_prefetch(k + off, 0, 1);
    __builtin_prefetch(v + off, 0, 1);
  }
}

// out[h] = alpha[h] * out[h] + sum_j p[h][j] v_j for G heads at once: each value row is loaded
// once for the group and the G x NV accumulator chains interleave.
template <int NV, int G, bool kF16>
void OnlinePvGroup(const void* vt, int hd, int nk, const float* pbuf, const float* alpha,
                   float* out) {
  V o[G][NV];
  for (int g = 0; g < G; ++g) {
    const V a = S::Set1(alpha[g]);
    for (int v = 0; v < NV; ++v) o[g][v] = S::Mul(S::Load(out + g * hd + v * L), a);
  }
  for (int j = 0; j < nk; ++j) {
    V vj[NV];
    for (int v = 0; v < NV; ++v) vj[v] = LoadValue<kF16>(vt, hd, j, v);
    for (int g = 0; g < G; ++g) {
      const V pj = S::Set1(pbuf[g * kKt + j]);
      for (int v = 0; v < NV; ++v) o[g][v] = S::Fma(pj, vj[v], o[g][v]);
    }
  }
  for (int g = 0; g < G; ++g) {
    for (int v = 0; v < NV; ++v) S::Store(out + g * hd + v * L, o[g][v]);
  }
}

template <int NV, bool kF16>
void OnlinePvHeads(const void* vt, int hd, int nk, int nq, const float* pbuf, const float* alpha,
                   float* out) {
  constexpr int kG = kPvRegs / NV > 4 ? 4 : (kPvRegs / NV < 1 ? 1 : kPvRegs / NV);
  int h = 0;
  for (; h + kG <= nq; h += kG) {
    OnlinePvGroup<NV, kG, kF16>(vt, hd, nk, pbuf + h * kKt, alpha + h, out + h * hd);
  }
  switch (nq - h) {  // at most kG - 1 heads left
    case 3:
      if constexpr (kG > 3) {
        OnlinePvGroup<NV, 3, kF16>(vt, hd, nk, pbuf + h * kKt, alpha + h, out + h * hd);
      }
      break;
    case 2:
      if constexpr (kG > 2) {
        OnlinePvGroup<NV, 2, kF16>(vt, hd, nk, pbuf + h * kKt, alpha + h, out + h * hd);
      }
      break;
    case 1:
      OnlinePvGroup<NV, 1, kF16>(vt, hd, nk, pbuf + h * kKt, alpha + h, out + h * hd);
      break;
    default:
      break;
  }
}

// AttendBlocks in one pass with NV = head_dim / kLanes vectors known at compile time (0: any,
// at run time). Per tile: the scores of every head, then every head's softmax update, then the
// value accumulation for all heads together.
template <int NV>
void AttendBlocksOnline(const AttentionParams& p, const float* q, std::int64_t q_pos,
                        const KvBlockRef* blocks, std::size_t n_blocks, float* out, float* lse) {
  const int hd = p.head_dim, nq = p.n_q, nv = NV > 0 ? NV : hd / L;
  alignas(64) float kbuf[kKt * kMaxHeadDim], vbuf[kKt * kMaxHeadDim];
  alignas(64) float qs[kMaxGroup * kMaxHeadDim];
  alignas(64) float pbuf[kMaxGroup * kKt];
  float m[kMaxGroup], l[kMaxGroup], alpha[kMaxGroup];
  V s[kMaxGroup];
  ScaleQueries(p, q, qs, out);
  for (int h = 0; h < nq; ++h) {
    m[h] = kNegInf;
    l[h] = 0.0f;
  }
  const std::size_t row_bytes = static_cast<std::size_t>(hd) * (p.dtype == KvDType::kF16 ? 2 : 4);
  for (std::size_t bi = 0; bi < n_blocks && bi < kOnlinePrefetchBlocks; ++bi) {
    PrefetchBlock(blocks[bi], row_bytes);
  }
  for (std::size_t bi = 0; bi < n_blocks; ++bi) {
    const KvBlockRef& b = blocks[bi];
    if (bi + kOnlinePrefetchBlocks < n_blocks)
      PrefetchBlock(blocks[bi + kOnlinePrefetchBlocks], row_bytes);
    const std::int64_t nt = VisibleTokens(b, q_pos);
    for (std::int64_t t0 = FirstInWindow(p, b, q_pos); t0 < nt; t0 += kKt) {
      const int nk = static_cast<int>(nt - t0 < kKt ? nt - t0 : kKt);
      const float* kt = TileRows(b.k, p.dtype, hd, t0, nk, kbuf);
      // A full f16 tile's values are converted as the PV step loads them (once per group).
      const bool v_direct = NV > 0 && p.dtype == KvDType::kF16 && nk == kKt;
      const float* vt = v_direct ? nullptr : TileRows(b.v, p.dtype, hd, t0, nk, vbuf);
      for (int h = 0; h < nq; ++h) s[h] = TileScores<NV>(p, qs + h * hd, kt, nk);
      // Online softmax: rescale by e^(m_old - m_new), accumulate e^(s - m_new).
      for (int h = 0; h < nq; ++h) {
        const float tile_max = S::ReduceMax(s[h]);
        const float m_new = tile_max > m[h] ? tile_max : m[h];
        alpha[h] = S::Lane0(S::Exp(S::Set1(m[h] - m_new)));  // m_old = -inf gives 0
        const V pv = S::Exp(S::Sub(s[h], S::Set1(m_new)));
        l[h] = l[h] * alpha[h] + S::ReduceAdd(pv);
        m[h] = m_new;
        S::Store(pbuf + h * kKt, pv);
      }
      if constexpr (NV > 0) {
        if (v_direct) {
          OnlinePvHeads<NV, true>(static_cast<const std::uint16_t*>(b.v) + t0 * hd, hd, nk, nq,
                                  pbuf, alpha, out);
        } else {
          OnlinePvHeads<NV, false>(vt, hd, nk, nq, pbuf, alpha, out);
        }
      } else {
        for (int h = 0; h < nq; ++h) {
          float* oh = out + h * hd;
          const V va = S::Set1(alpha[h]);
          for (int v = 0; v < nv; ++v) {
            V o = S::Mul(S::Load(oh + v * L), va);
            for (int j = 0; j < nk; ++j) {
              o = S::Fma(S::Set1(pbuf[h * kKt + j]), S::Load(vt + j * hd + v * L), o);
            }
            S::Store(oh + v * L, o);
          }
        }
      }
    }
  }
  NormalizeHeads(hd, nq, m, l, out, lse);
}

}  // namespace

}  // namespace smartgen::kernels::internal::SMARTGEN_SIMD_NS
