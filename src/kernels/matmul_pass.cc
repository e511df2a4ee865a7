// One parallel pass of several matrix products (matmul_pass.h): chunking, the per-chunk kernel
// choice and epilogues, and the activations prepared once per pass for the fast-dot kernels.
#include "kernels/matmul_pass.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <vector>

#include "core/lane_claims.h"
#include "kernels/q5_0_groups.h"
#include "kernels/q8_0_groups.h"

namespace smartgen::kernels::internal {
namespace {

// Rows of a chunk are a multiple of this (SIMD kernels block rows).
constexpr std::int64_t kRowGrain = 16;
// Chunks are claimed dynamically (core::ThreadPool::ForEachChunk), so a thread that runs late
// or slow (preempted by the node's other threads on a shared machine) leaves its share to the
// others; the chunks are sized for that: at least kVecChunksPerThread (matmul_pass.h) chunks per
// thread in a single-token pass, kMulChunksPerThread in a batch's. A GEMV chunk is also at most
// about kVecChunkBytes of weights (~40-80 us), what another lane's thread takes at once.
constexpr std::size_t kVecChunkBytes = 1 << 20;
std::atomic<int> vec_chunks_per_thread{kVecChunksPerThread};
std::atomic<int> vec_max_run{kVecMaxRun};
std::atomic<std::size_t> vec_run_bytes{kVecRunBytes};
constexpr std::int64_t kMulChunksPerThread = 4;
// GEMM chunks: at least this many rows (each chunk re-reads its tokens' activations), and
// token ranges of at least this many tokens when rows alone give too few chunks.
constexpr std::int64_t kMulChunkRows = 64;
constexpr std::int64_t kMulChunkTokens = 96;

std::int64_t CeilDiv(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}
std::int64_t RoundUp(std::int64_t a, std::int64_t b) {
  return CeilDiv(a, b) * b;
}

// Up to this many tokens (a decode batch) go through the fast-dot kernels (token by token over
// blocks of kActRows weight rows, or the batched kernels); more (a prefill) through the batched
// kernels where every product of a pass has one (every quantized type with VNNI), else
// the f32 GEMM.
constexpr std::int64_t kActTokens = 64;
constexpr std::int64_t kActRows = 32;
// From this many tokens a batch goes through the batched kernels (one weight unpack per panel of
// 16 tokens, every token a lane) rather than token by token (Segment::panel_min_tokens).
constexpr std::int64_t kPanelMinTokens = 3;
// Q4_0's from 5: its single-token kernel is the fastest integer dot (62-65 Gweights/s a thread in
// cache at 896-1536 columns), so 4 tokens one after another over each 32-row block cost less than
// a 16-lane panel with 4 lanes used: batch 4 at KV 512 decoded 1.34-1.71x faster so on Qwen2.5-0.5B
// Q4_0 and 1.12-1.20x on SmolLM2-135M Q4_0, while Q8_0 was 0.87-0.92x and the Q4_K_M mixes level
// (AMD EPYC Zen 5, 2026-12-05, docs/RESULTS.md).
constexpr std::int64_t kPanelMinTokensQ4_0 = 5;
// Prefill chunks of up to this many tokens (Forward's micro-batch) also take the batched kernels.
constexpr std::int64_t kPanelPrefillTokens = 512;

// out[t][0..r1-r0) = rows [r0, r1) of W times tokens x[0..nt), out row stride ldo; the tokens go
// through vec_act on act[0..nt) when the segment has one.
void Product(MatVecFn vec, MatMulFn mul, MatVecActFn vec_act, const ActQ8* act, MatMulActFn mul_act,
             const ActPanel* panel, const void* w, std::size_t row_bytes, std::int64_t cols,
             const float* x, std::int64_t nt, std::int64_t r0, std::int64_t r1, float* out,
             std::int64_t ldo) {
  const void* wr = static_cast<const std::byte*>(w) + r0 * row_bytes;
  if (mul_act != nullptr && panel != nullptr) {
    for (std::int64_t t = 0; t < nt; t += kPanelTokens) {
      mul_act(wr, row_bytes, cols, panel[t / kPanelTokens], out + t * ldo, ldo, 0, r1 - r0);
    }
  } else if (vec_act != nullptr && nt == 1) {
    // One token: the whole range in one call, which reads it as two streams (row_streams.h).
    vec_act(wr, row_bytes, cols, act[0], out, 0, r1 - r0);
  } else if (vec_act != nullptr) {
    // Tokens act[0..nt), kActRows rows at a time, so each block of weight rows is read from
    // memory once and from cache by the other tokens.
    for (std::int64_t rb = 0; rb < r1 - r0; rb += kActRows) {
      const std::int64_t re = std::min(r1 - r0, rb + kActRows);
      for (std::int64_t t = 0; t < nt; ++t)
        vec_act(wr, row_bytes, cols, act[t], out + t * ldo, rb, re);
    }
  } else if (nt == 1) {
    vec(wr, row_bytes, cols, x, out, 0, r1 - r0);
  } else {
    mul(wr, row_bytes, cols, x, nt, out, ldo, 0, r1 - r0);
  }
}

// Token sub-blocks of a chunk that goes through scratch (accumulate, SwiGLU): the products of
// one sub-block stay in cache until the epilogue reads them; the chunk's weight rows are
// re-read from cache, not memory, by the next sub-block.
constexpr std::int64_t kEpilogueTokens = 512;

}  // namespace

void RunChunk(const KernelTable& table, const Segment& s, std::int64_t r0, std::int64_t r1,
              std::int64_t t0, std::int64_t t1) {
  const std::int64_t nr = r1 - r0;
  // Panels cover tokens from 0 in steps of kPanelTokens (decode batches are one token chunk).
  const auto panel_at = [&](std::int64_t t) {
    return s.panel != nullptr && t % kPanelTokens == 0 ? s.panel + t / kPanelTokens : nullptr;
  };
  if (s.epilogue == Epilogue::kStore) {
    Product(s.vec, s.mul, s.vec_act, s.act == nullptr ? nullptr : s.act + t0, s.mul_act,
            panel_at(t0), s.w, s.row_bytes, s.cols, s.x + t0 * s.cols, t1 - t0, r0, r1,
            s.y + t0 * s.rows + r0, s.rows);
    return;
  }
  for (std::int64_t ts = t0; ts < t1; ts += kEpilogueTokens) {
    const std::int64_t nt = std::min(kEpilogueTokens, t1 - ts);
    const float* x = s.x + ts * s.cols;
    float* y = s.y + ts * s.rows + r0;  // row stride s.rows
    // The product goes to thread scratch [nt][nr] first, then into y.
    float* tmp = ThreadScratch(2, static_cast<std::size_t>(nr * nt));
    const ActQ8* act = s.act == nullptr ? nullptr : s.act + ts;
    const ActPanel* panel = panel_at(ts);
    Product(s.vec, s.mul, s.vec_act, act, s.mul_act, panel, s.w, s.row_bytes, s.cols, x, nt, r0, r1,
            tmp, nr);
    if (s.epilogue == Epilogue::kAccumulate) {
      for (std::int64_t t = 0; t < nt; ++t) table.add_in_place(y + t * s.rows, tmp + t * nr, nr);
      continue;
    }
    float* up = ThreadScratch(3, static_cast<std::size_t>(nr * nt));
    Product(s.vec_up, s.mul_up, s.vec_act_up, act, s.mul_act_up, panel, s.w_up, s.row_bytes_up,
            s.cols, x, nt, r0, r1, up, nr);
    for (std::int64_t t = 0; t < nt; ++t) {
      s.gated(tmp + t * nr, up + t * nr, nr, y + t * s.rows);
    }
  }
}

void RunRowChunks(const KernelTable& table, const Segment* segs, int n_segs,
                  std::int64_t chunk_rows, std::int64_t first, std::int64_t count) {
  for (std::int64_t c = first, end = first + count; c < end;) {
    int i = 0;
    while (i + 1 < n_segs && segs[i + 1].first_chunk <= c) ++i;
    const Segment& s = segs[i];
    const std::int64_t last = i + 1 < n_segs ? std::min(end, segs[i + 1].first_chunk) : end;
    const std::int64_t r0 = (c - s.first_chunk) * chunk_rows;
    RunChunk(table, s, r0, std::min(s.rows, (last - s.first_chunk) * chunk_rows), 0, 1);
    c = last;
  }
}

namespace {

// The panels of n prepared tokens, from *next on (advanced past them), into panels[*used..).
const ActPanel* BuildPanels(const ActQ8* act, std::int64_t n, std::int64_t cols, float** next,
                            std::vector<ActPanel>& panels, std::size_t* used) {
  ActPanel* first = panels.data() + *used;
  for (std::int64_t t = 0; t < n; t += kPanelTokens) {
    const int nt = static_cast<int>(std::min<std::int64_t>(kPanelTokens, n - t));
    panels[(*used)++] = BuildActPanel(act + t, nt, cols, *next);
    *next += PanelFloats(cols);
  }
  return first;
}

}  // namespace

void PrepareSegmentActs(Segment* segs, int n_segs, std::int64_t n, std::vector<ActQ8>& acts,
                        std::vector<ActPanel>& panels) {
  const auto wants = [](const Segment& s) {
    return s.prepare != nullptr && (s.vec_act != nullptr || s.vec_act_up != nullptr);
  };
  const auto wants_panels = [n](const Segment& s) {
    return n >= s.panel_min_tokens && (s.mul_act != nullptr || s.mul_act_up != nullptr);
  };
  const std::int64_t n_panels = CeilDiv(n, kPanelTokens);
  // Per token: q and |q| (cols bytes each) and three per-block words, with slack between.
  const auto floats_for = [](std::int64_t cols) {
    return static_cast<std::size_t>(2 * (cols / 4 + 16) + 3 * (cols / 32 + 16));
  };
  std::size_t total = 0, n_acts = 0, n_panel_total = 0;
  for (int i = 0; i < n_segs; ++i) {
    if (wants(segs[i])) total += floats_for(segs[i].cols) * n, n_acts += n;
    if (wants(segs[i]) && wants_panels(segs[i])) {
      total += PanelFloats(segs[i].cols) * static_cast<std::size_t>(n_panels);
      n_panel_total += static_cast<std::size_t>(n_panels);
    }
  }
  if (total == 0) return;
  acts.resize(n_acts);  // not grown below: the pointers into it stay valid
  panels.resize(n_panel_total);
  std::size_t panels_used = 0;
  float* next = ThreadScratch(5, total);
  std::size_t used = 0;
  for (int i = 0; i < n_segs; ++i) {
    Segment& s = segs[i];
    if (!wants(s)) continue;
    for (int j = 0; j < i && s.act == nullptr; ++j) {
      if (segs[j].act != nullptr && segs[j].x == s.x && segs[j].cols == s.cols) {
        s.act = segs[j].act;
        s.panel = wants_panels(s) ? segs[j].panel : nullptr;
      }
    }
    if (s.act != nullptr && (s.panel != nullptr || !wants_panels(s))) continue;
    if (s.act != nullptr) {  // shared activations without panels (the other kernel had none)
      s.panel = BuildPanels(s.act, n, s.cols, &next, panels, &panels_used);
      continue;
    }
    const std::int64_t nb = s.cols / 32;
    s.act = &acts[used];
    for (std::int64_t t = 0; t < n; ++t) {
      auto* q = reinterpret_cast<std::int8_t*>(next);
      auto* qabs = reinterpret_cast<std::uint8_t*>(next + s.cols / 4 + 16);
      auto* qneg = reinterpret_cast<std::uint32_t*>(next + 2 * (s.cols / 4 + 16));
      float* d = next + 2 * (s.cols / 4 + 16) + (nb + 16);
      float* sum8 = d + (nb + 16);
      next = sum8 + (nb + 16);
      s.prepare(s.x + t * s.cols, s.cols, q, qabs, qneg, d, sum8);
      acts[used++] = ActQ8{q, qabs, qneg, d, sum8};
    }
    if (wants_panels(s)) s.panel = BuildPanels(s.act, n, s.cols, &next, panels, &panels_used);
  }
}


int KindIndex(gguf::GgmlType type) {
  switch (type) {
    case gguf::GgmlType::kF32:
      return static_cast<int>(WeightKind::kF32);
    case gguf::GgmlType::kF16:
      return static_cast<int>(WeightKind::kF16);
    case gguf::GgmlType::kBF16:
      return static_cast<int>(WeightKind::kBF16);
    case gguf::GgmlType::kQ8_0:
      return static_cast<int>(WeightKind::kQ8_0);
    case gguf::GgmlType::kQ4_0:
      return static_cast<int>(WeightKind::kQ4_0);
    case gguf::GgmlType::kQ4_K:
      return static_cast<int>(WeightKind::kQ4_K);
    case gguf::GgmlType::kQ6_K:
      return static_cast<int>(WeightKind::kQ6_K);
    case gguf::GgmlType::kQ4_1:
      return static_cast<int>(WeightKind::kQ4_1);
    case gguf::GgmlType::kQ5_0:
      return static_cast<int>(WeightKind::kQ5_0);
    case gguf::GgmlType::kQ5_1:
      return static_cast<int>(WeightKind::kQ5_1);
    case gguf::GgmlType::kQ2_K:
      return static_cast<int>(WeightKind::kQ2_K);
    case gguf::GgmlType::kQ3_K:
      return static_cast<int>(WeightKind::kQ3_K);
    case gguf::GgmlType::kQ5_K:
      return static_cast<int>(WeightKind::kQ5_K);
    case gguf::GgmlType::kIQ4_NL:
      return static_cast<int>(WeightKind::kIQ4_NL);
    case gguf::GgmlType::kIQ4_XS:
      return static_cast<int>(WeightKind::kIQ4_XS);
    default:
      return -1;
  }
}

void SetVecChunking(int chunks_per_thread, int max_run, std::size_t run_bytes) {
  vec_chunks_per_thread.store(std::max(chunks_per_thread, 1), std::memory_order_relaxed);
  vec_max_run.store(std::max(max_run, 1), std::memory_order_relaxed);
  vec_run_bytes.store(run_bytes, std::memory_order_relaxed);
}

std::int64_t VecOwnRun(std::int64_t chunk_rows, std::size_t max_row_bytes) {
  const std::size_t chunk_bytes =
      std::max<std::size_t>(1, static_cast<std::size_t>(chunk_rows) * max_row_bytes);
  const std::size_t most = vec_run_bytes.load(std::memory_order_relaxed) / chunk_bytes;
  const auto max_run = static_cast<std::size_t>(vec_max_run.load(std::memory_order_relaxed));
  return static_cast<std::int64_t>(std::clamp<std::size_t>(most, 1, max_run));
}

std::int64_t VecChunkRows(std::int64_t total_rows, std::size_t max_row_bytes, int threads) {
  const auto by_bytes =
      static_cast<std::int64_t>(kVecChunkBytes / std::max<std::size_t>(max_row_bytes, 1));
  const std::int64_t per_thread = vec_chunks_per_thread.load(std::memory_order_relaxed);
  const std::int64_t rows = std::min(by_bytes, CeilDiv(total_rows, threads * per_thread));
  return std::max(kRowGrain, RoundUp(rows, kRowGrain));
}

core::IdlePrefetch PlanIdlePrefetch(const NextPass& next, int threads,
                                    const core::LaneShares* shares) {
  core::IdlePrefetch plan;
  int m = 0;
  while (m < 3 && next.w[m] != nullptr) ++m;
  if (m == 0 || threads < 2) return plan;
  std::int64_t total_rows = 0;
  std::size_t max_row_bytes = next.up == nullptr ? 0 : next.up->row_bytes();
  for (int i = 0; i < m; ++i) {
    total_rows += next.w[i]->rows;
    max_row_bytes = std::max(max_row_bytes, next.w[i]->row_bytes());
  }
  const std::int64_t chunk_rows = VecChunkRows(total_rows, max_row_bytes, threads);
  std::int64_t first[3] = {0, 0, 0}, row_chunks = 0;
  for (int i = 0; i < m; ++i) {
    first[i] = row_chunks;
    row_chunks += CeilDiv(next.w[i]->rows, chunk_rows);
  }
  const int lanes = std::min(threads, core::IdlePrefetch::kMaxLanes);
  for (int lane = 0; lane < lanes; ++lane) {
    const auto [cb, ce] = core::LaneRange(row_chunks, lane, threads, shares);
    std::size_t left = kIdlePrefetchBytes;
    for (int i = 0; i < m && left > 0; ++i) {
      const WeightView& w = *next.w[i];
      const std::int64_t a = std::max(cb, first[i]);
      const std::int64_t b = std::min(ce, first[i] + CeilDiv(w.rows, chunk_rows));
      if (a >= b) continue;
      const std::int64_t r0 = (a - first[i]) * chunk_rows;
      const std::int64_t r1 = std::min(w.rows, (b - first[i]) * chunk_rows);
      // A gated pass reads the same rows of gate and up in each chunk.
      const std::size_t share = next.up == nullptr ? left : left / 2;
      const std::size_t bytes = std::min(share, static_cast<std::size_t>(r1 - r0) * w.row_bytes());
      plan.Add(lane, w.row(r0), bytes);
      left -= bytes;
      if (next.up != nullptr) {
        const std::size_t up_bytes =
            std::min(share, static_cast<std::size_t>(r1 - r0) * next.up->row_bytes());
        plan.Add(lane, next.up->row(r0), up_bytes);
        left -= up_bytes;
      }
    }
  }
  return plan;
}

void RunSegments(const KernelTable& table, Segment* segs, int n_segs, std::int64_t n,
                 core::ThreadPool* pool, const NextPass* next) {
  thread_local std::vector<ActQ8> acts;
  thread_local std::vector<ActPanel> panels;
  if (n > kActTokens) {
    // A prefill: the batched integer-dot kernels where every product of the segment has one
    // (up to kPanelPrefillTokens, the micro-batch), else the f32 GEMM.
    for (int i = 0; i < n_segs; ++i) {
      Segment& s = segs[i];
      const bool batched = n <= kPanelPrefillTokens &&
                           (s.vec_act == nullptr || s.mul_act != nullptr) &&
                           (s.vec_act_up == nullptr || s.mul_act_up != nullptr) &&
                           (s.vec_act != nullptr || s.vec_act_up != nullptr);
      if (!batched) s.vec_act = s.vec_act_up = nullptr;
    }
  }
  PrepareSegmentActs(segs, n_segs, n, acts, panels);
  std::int64_t total_rows = 0;
  std::size_t max_row_bytes = 0;
  for (int i = 0; i < n_segs; ++i) {
    total_rows += segs[i].rows;
    max_row_bytes = std::max({max_row_bytes, segs[i].row_bytes, segs[i].row_bytes_up});
  }
  const int threads = pool == nullptr ? 1 : pool->size();
  const std::int64_t want_chunks = threads * kMulChunksPerThread;
  std::int64_t chunk_rows = total_rows, chunk_tokens = n;
  if (threads > 1 && n == 1) {
    chunk_rows = VecChunkRows(total_rows, max_row_bytes, threads);
  } else if (threads > 1) {
    chunk_rows = std::max(kMulChunkRows, RoundUp(CeilDiv(total_rows, want_chunks), kRowGrain));
    std::int64_t row_chunks = 0;
    for (int i = 0; i < n_segs; ++i) row_chunks += CeilDiv(segs[i].rows, chunk_rows);
    if (row_chunks < want_chunks) {
      const std::int64_t token_chunks = CeilDiv(want_chunks, row_chunks);
      // Token chunks start on panel boundaries (kMulChunkTokens is a multiple of 16).
      chunk_tokens = RoundUp(std::max(kMulChunkTokens, CeilDiv(n, token_chunks)), kPanelTokens);
    }
  }
  std::int64_t row_chunks = 0;
  for (int i = 0; i < n_segs; ++i) {
    segs[i].first_chunk = row_chunks;
    row_chunks += CeilDiv(segs[i].rows, chunk_rows);
  }
  const std::int64_t token_chunks = CeilDiv(n, chunk_tokens);

  // A single token's rows: every thread runs of its own lane's chunks first (core::LaneClaims,
  // VecOwnRun). (Lanes against claiming in order, two decode threads on Zen 5: step time
  // 0.89-0.91 on SmolLM2-135M "Q4_K_M", 0.94-0.96 on its Q8_0, 0.97 on Qwen2.5-0.5B Q8_0, none on
  // F32; docs/RESULTS.md.)
  const std::int64_t n_chunks = row_chunks * token_chunks;
  std::optional<core::LaneClaims> lanes;
  if (n == 1 && threads > 1) lanes.emplace(n_chunks, threads);
  const std::int64_t own_run = VecOwnRun(chunk_rows, max_row_bytes);
  auto run_chunk = [&](std::int64_t c) {
    if (lanes) {
      // A run of row chunks (one token chunk): one call per segment it covers. The pool's later
      // calls find the chunks claimed and return.
      const core::LaneClaims::Run run = lanes->NextRun(own_run);
      RunRowChunks(table, segs, n_segs, chunk_rows, run.first, run.count);
      return;
    }
    const std::int64_t rc = c / token_chunks, tc = c % token_chunks;
    int i = 0;
    while (i + 1 < n_segs && segs[i + 1].first_chunk <= rc) ++i;
    const Segment& s = segs[i];
    const std::int64_t r0 = (rc - s.first_chunk) * chunk_rows;
    const std::int64_t t0 = tc * chunk_tokens;
    RunChunk(table, s, r0, std::min(s.rows, r0 + chunk_rows), t0, std::min(n, t0 + chunk_tokens));
  };
  if (pool == nullptr) {
    for (std::int64_t c = 0; c < n_chunks; ++c) run_chunk(c);
  } else if (lanes && next != nullptr) {
    const core::IdlePrefetch plan = PlanIdlePrefetch(*next, threads);
    pool->ForEachChunk(n_chunks, run_chunk, &plan);
  } else {
    pool->ForEachChunk(n_chunks, run_chunk);
  }
}

bool HasKernels(const KernelTable& table, gguf::GgmlType type) {
  const int kind = KindIndex(type);
  return kind >= 0 && table.mat_vec[kind] != nullptr && table.mat_mul[kind] != nullptr;
}

Segment MakeSegment(const KernelTable& table, const WeightView& w, const float* x, float* y,
                    Epilogue epilogue) {
  const int kind = KindIndex(w.type);
  Segment s{table.mat_vec[kind], table.mat_mul[kind], w.data, w.row_bytes(), w.rows, w.cols, x, y};
  // The BF16 kernels read 32 columns per step.
  const bool whole = w.type != gguf::GgmlType::kBF16 || w.cols % 32 == 0;
  if (MatVecFn fast = FastDotKernel(table, w.type); fast != nullptr && whole) s.vec = fast;
  if (MatMulFn fast = FastDotMulKernel(table, w.type); fast != nullptr && whole) s.mul = fast;
  s.vec_act = FastDotActKernel(table, w.type, &s.prepare);
  if (s.vec_act != nullptr) s.mul_act = FastDotBatchKernel(table, w.type);
  if (w.layout == WeightLayout::kQ5_0Groups) {
    s.vec = GroupedQ5_0(s.vec);
    s.mul = GroupedQ5_0(s.mul);
    if (s.vec_act != nullptr) s.vec_act = GroupedQ5_0(s.vec_act);
    if (s.mul_act != nullptr) s.mul_act = GroupedQ5_0(s.mul_act);
  }
  if (w.layout == WeightLayout::kQ8_0Groups) {
    s.vec = GroupedQ8_0(s.vec);
    s.mul = GroupedQ8_0(s.mul);
    if (s.vec_act != nullptr) s.vec_act = GroupedQ8_0(s.vec_act);
    if (s.mul_act != nullptr) s.mul_act = GroupedQ8_0(s.mul_act);
  }
  s.panel_min_tokens = w.type == gguf::GgmlType::kQ4_0 ? kPanelMinTokensQ4_0 : kPanelMinTokens;
  s.epilogue = epilogue;
  return s;
}

Segment MakeGatedSegment(const KernelTable& table, const WeightView& gate, const WeightView& up,
                         const float* x, float* out, SwiGluFn gated) {
  Segment s = MakeSegment(table, gate, x, out, Epilogue::kSwiGlu);
  s.gated = gated;
  const Segment u = MakeSegment(table, up, x, out, Epilogue::kStore);
  s.vec_up = u.vec;
  s.mul_up = u.mul;
  s.w_up = u.w;
  s.row_bytes_up = u.row_bytes;
  s.vec_act_up = u.vec_act;
  s.mul_act_up = u.mul_act;
  if (s.prepare == nullptr) s.prepare = u.prepare;
  return s;
}

}  // namespace smartgen::kernels::internal
