// The decode attention kernel (attention.h's AttendBlocks: one token's GQA group against a list
// of KV blocks), written once against the Simd vocabulary and compiled per ISA after
// attention_simd-inl.h, whose helpers (Supported, TileRows, VisibleTokens, FirstInWindow,
// SoftCap) it uses.
//
// Three passes over the visible keys, in tiles of kKt keys:
//   1. keys:   every tile's scores for every head (kKt dot products reduced together), kept in a
//              per-thread buffer, and each head's maximum;
//   2. scores: p = e^(s - max) in place, and each head's sum;
//   3. values: out += p v, the accumulators in registers over runs of tiles.
// A decode step at long context streams every block from memory once (memory-bound). Each pass
// here streams one half of each block (its K rows, then its V rows) with a short loop that keeps
// loads in flight, where a single pass with an online softmax interleaves both halves with a
// per-tile max / rescale chain and overlapped little of its work with the memory: at 64 dims it
// streamed 8.2-8.5 GB/s on one core against 9.9 for these passes (docs/RESULTS.md, "Decode
// attention in three passes"). From 128 dims (kOnlineHeadDim) a block's K and V halves are whole
// pages, reading each block's in address order measured faster, and AttendBlocks takes the
// one-pass kernel of attention_decode_online_simd-inl.h.
#ifndef SMARTGEN_SIMD_NS
#error "define SMARTGEN_SIMD_NS and include kernels/attention_simd-inl.h before this file"
#endif

namespace smartgen::kernels::internal::SMARTGEN_SIMD_NS {
namespace {

// Each pass prefetches the half block it will read kPrefetchKeys keys ahead (into L2): a
// block's K or V rows are one short run (2-4 KiB), too short for the hardware prefetcher to
// ramp up on.
constexpr std::int64_t kPrefetchKeys = 128;
// Head dims from which AttendBlocks takes the one-pass kernel (attention_decode_online_simd-inl.h).
constexpr int kOnlineHeadDim = 128;
// Tiles whose values the value pass accumulates in registers before storing them.
constexpr int kRunTiles = 8;

void PrefetchRows(const void* base, std::size_t bytes) {
  const auto* p = static_cast<const char*>(base);
  for (std::size_t off = 0; off < bytes; off += 64) __builtin_prefetch(p + off, 0, 1);
}

// One visible tile: its first V row and its key count (1..kKt).
struct DecodeTile {
  const void* v;
  std::int64_t nk;
};

std::size_t CountTiles(const AttentionParams& p, std::int64_t q_pos, const KvBlockRef* blocks,
                       std::size_t n_blocks) {
  std::size_t n = 0;
  for (std::size_t bi = 0; bi < n_blocks; ++bi) {
    const std::int64_t first = FirstInWindow(p, blocks[bi], q_pos);
    const std::int64_t nt = VisibleTokens(blocks[bi], q_pos);
    if (nt > first) n += static_cast<std::size_t>((nt - first + kKt - 1) / kKt);
  }
  return n;
}

// Pass 1: the scores of every visible tile, sc[tile][head][kKt] (keys past a tile's end at
// -inf), each head's running maximum in mx, each tile's V rows in tiles. NV as AttendBlocksT.
template <int NV>
void KeyPass(const AttentionParams& p, const float* qs, std::int64_t q_pos,
             const KvBlockRef* blocks, std::size_t n_blocks, float* sc, DecodeTile* tiles, V* mx) {
  const int hd = p.head_dim, nq = p.n_q;
  const std::size_t row_bytes = static_cast<std::size_t>(hd) * KvDTypeSize(p.dtype);
  alignas(64) float kbuf[kKt * kMaxHeadDim];
  std::size_t ahead = 0;  // the next block to prefetch
  std::int64_t ahead_keys = 0;
  std::size_t ti = 0;
  for (std::size_t bi = 0; bi < n_blocks; ++bi) {
    const KvBlockRef& b = blocks[bi];
    for (; ahead < n_blocks && ahead_keys < kPrefetchKeys; ++ahead) {
      PrefetchRows(blocks[ahead].k, row_bytes * static_cast<std::size_t>(blocks[ahead].n_tokens));
      ahead_keys += blocks[ahead].n_tokens;
    }
    ahead_keys -= b.n_tokens;
    const std::int64_t nt = VisibleTokens(b, q_pos);
    for (std::int64_t t0 = FirstInWindow(p, b, q_pos); t0 < nt; t0 += kKt, ++ti) {
      const int nk = static_cast<int>(nt - t0 < kKt ? nt - t0 : kKt);
      tiles[ti] = {static_cast<const char*>(b.v) + static_cast<std::size_t>(t0) * row_bytes, nk};
      const float* kt = TileRows(b.k, p.dtype, hd, t0, nk, kbuf);
      float* st = sc + ti * static_cast<std::size_t>(nq) * kKt;
      for (int h = 0; h < nq; ++h) {
        const V s = TileScores<NV>(p, qs + h * hd, kt, nk);
        S::Store(st + h * kKt, s);
        mx[h] = S::Max(mx[h], s);
      }
    }
  }
}

// Pass 2: p = e^(s - m) in place for each head, m its maximum (0 for a head that saw no key,
// whose p are then all 0); l its sum.
void ScorePass(int nq, std::size_t n_tiles, const V* mx, float* sc, float* m, float* l) {
  for (int h = 0; h < nq; ++h) {
    const float mh = S::ReduceMax(mx[h]);
    m[h] = mh == kNegInf ? 0.0f : mh;
    const V shift = S::Set1(m[h]);
    V sum = S::Zero();
    float* sh = sc + static_cast<std::size_t>(h) * kKt;
    for (std::size_t t = 0; t < n_tiles; ++t, sh += static_cast<std::size_t>(nq) * kKt) {
      const V e = S::Exp(S::Sub(S::Load(sh), shift));
      sum = S::Add(sum, e);
      S::Store(sh, e);
    }
    l[h] = S::ReduceAdd(sum);
  }
}

// out[h0 .. h0 + G) += sum over tiles [t_begin, t_end) and their keys of p v, each value row
// loaded once for the G heads, the G x NV accumulators in registers.
template <int NV, int G, bool kF16>
void PvRun(const DecodeTile* tiles, std::size_t t_begin, std::size_t t_end, int hd, int nq,
           const float* sc, int h0, float* out) {
  V o[G][NV];
  for (int g = 0; g < G; ++g) {
    for (int v = 0; v < NV; ++v) o[g][v] = S::Load(out + (h0 + g) * hd + v * L);
  }
  const auto add_row = [&](const void* vt, const float* pt, std::int64_t j) {
    V vj[NV];
    for (int v = 0; v < NV; ++v) vj[v] = LoadValue<kF16>(vt, hd, j, v);
    for (int g = 0; g < G; ++g) {
      const V pj = S::Set1(pt[g * kKt + j]);
      for (int v = 0; v < NV; ++v) o[g][v] = S::Fma(pj, vj[v], o[g][v]);
    }
  };
  for (std::size_t t = t_begin; t < t_end; ++t) {
    const float* pt = sc + t * static_cast<std::size_t>(nq) * kKt + h0 * kKt;
    if (tiles[t].nk == kKt) {  // a full tile: a loop of known length
      for (int j = 0; j < kKt; ++j) add_row(tiles[t].v, pt, j);
    } else {
      for (std::int64_t j = 0; j < tiles[t].nk; ++j) add_row(tiles[t].v, pt, j);
    }
  }
  for (int g = 0; g < G; ++g) {
    for (int v = 0; v < NV; ++v) S::Store(out + (h0 + g) * hd + v * L, o[g][v]);
  }
}

// PvRun over every head, in groups of as many heads as the registers hold.
template <int NV, bool kF16>
void PvHeads(const DecodeTile* tiles, std::size_t t_begin, std::size_t t_end, int hd, int nq,
             const float* sc, float* out) {
  constexpr int kG = kPvRegs / NV > 4 ? 4 : (kPvRegs / NV < 1 ? 1 : kPvRegs / NV);
  int h = 0;
  for (; h + kG <= nq; h += kG) PvRun<NV, kG, kF16>(tiles, t_begin, t_end, hd, nq, sc, h, out);
  switch (nq - h) {  // at most kG - 1 heads left
    case 3:
      if constexpr (kG > 3) PvRun<NV, 3, kF16>(tiles, t_begin, t_end, hd, nq, sc, h, out);
      break;
    case 2:
      if constexpr (kG > 2) PvRun<NV, 2, kF16>(tiles, t_begin, t_end, hd, nq, sc, h, out);
      break;
    case 1:
      PvRun<NV, 1, kF16>(tiles, t_begin, t_end, hd, nq, sc, h, out);
      break;
    default:
      break;
  }
}

// Pass 3 for head dims of NV vectors known at compile time (0: any, at run time), out zeroed.
template <int NV>
void ValuePass(const AttentionParams& p, const DecodeTile* tiles, std::size_t n_tiles,
               const float* sc, float* out) {
  const int hd = p.head_dim, nq = p.n_q;
  const bool f16 = p.dtype == KvDType::kF16;
  const std::size_t row_bytes = static_cast<std::size_t>(hd) * KvDTypeSize(p.dtype);
  std::size_t ahead = 0;
  std::int64_t ahead_keys = 0;
  for (std::size_t t0 = 0; t0 < n_tiles; t0 += kRunTiles) {
    const std::size_t t1 = t0 + kRunTiles < n_tiles ? t0 + kRunTiles : n_tiles;
    for (; ahead < n_tiles && ahead_keys < kPrefetchKeys + kRunTiles * kKt; ++ahead) {
      PrefetchRows(tiles[ahead].v, row_bytes * static_cast<std::size_t>(tiles[ahead].nk));
      ahead_keys += tiles[ahead].nk;
    }
    for (std::size_t t = t0; t < t1; ++t) ahead_keys -= tiles[t].nk;
    if constexpr (NV > 0) {
      if (f16) {
        PvHeads<NV, true>(tiles, t0, t1, hd, nq, sc, out);
      } else {
        PvHeads<NV, false>(tiles, t0, t1, hd, nq, sc, out);
      }
    } else {
      for (std::size_t t = t0; t < t1; ++t) {
        const float* pt = sc + t * static_cast<std::size_t>(nq) * kKt;
        for (int h = 0; h < nq; ++h) {
          for (int c = 0; c < hd; c += L) {
            V o = S::Load(out + h * hd + c);
            for (std::int64_t j = 0; j < tiles[t].nk; ++j) {
              const V vj = f16 ? LoadValue<true>(tiles[t].v, hd, j, c / L)
                               : LoadValue<false>(tiles[t].v, hd, j, c / L);
              o = S::Fma(S::Set1(pt[h * kKt + j]), vj, o);
            }
            S::Store(out + h * hd + c, o);
          }
        }
      }
    }
  }
}

template <int NV>
void AttendBlocksT(const AttentionParams& p, const float* q, std::int64_t q_pos,
                   const KvBlockRef* blocks, std::size_t n_blocks, float* out, float* lse) {
  const int nq = p.n_q;
  alignas(64) float qs[kMaxGroup * kMaxHeadDim];
  ScaleQueries(p, q, qs, out);
  V mx[kMaxGroup];
  for (int h = 0; h < nq; ++h) mx[h] = S::Set1(kNegInf);
  const std::size_t n_tiles = CountTiles(p, q_pos, blocks, n_blocks);
  // Scores [n_tiles][nq][kKt], then the tiles (16 bytes each, 4 floats' room).
  const std::size_t sc_floats = n_tiles * static_cast<std::size_t>(nq) * kKt;
  float* sc = ThreadScratch(7, sc_floats + 4 * n_tiles);
  auto* tiles = reinterpret_cast<DecodeTile*>(sc + sc_floats);
  static_assert(sizeof(DecodeTile) <= 4 * sizeof(float));
  KeyPass<NV>(p, qs, q_pos, blocks, n_blocks, sc, tiles, mx);
  float m[kMaxGroup], l[kMaxGroup];
  ScorePass(nq, n_tiles, mx, sc, m, l);
  ValuePass<NV>(p, tiles, n_tiles, sc, out);
  NormalizeHeads(p.head_dim, nq, m, l, out, lse);
}

}  // namespace

void AttendBlocks(const AttentionParams& p, const float* q, std::int64_t q_pos,
                  const KvBlockRef* blocks, std::size_t n_blocks, float* out, float* lse) {
  if (!Supported(p)) return scalar::AttendBlocks(p, q, q_pos, blocks, n_blocks, out, lse);
  if (p.head_dim >= kOnlineHeadDim) {
    switch (p.head_dim / L) {
      case 8:
        return AttendBlocksOnline<8>(p, q, q_pos, blocks, n_blocks, out, lse);
      default:
        return AttendBlocksOnline<0>(p, q, q_pos, blocks, n_blocks, out, lse);
    }
  }
  switch (p.head_dim / L) {
    case 2:
      return AttendBlocksT<2>(p, q, q_pos, blocks, n_blocks, out, lse);
    case 4:
      return AttendBlocksT<4>(p, q, q_pos, blocks, n_blocks, out, lse);
    case 8:
      return AttendBlocksT<8>(p, q, q_pos, blocks, n_blocks, out, lse);
    default:
      return AttendBlocksT<0>(p, q, q_pos, blocks, n_blocks, out, lse);
  }
}

}  // namespace smartgen::kernels::internal::SMARTGEN_SIMD_NS
