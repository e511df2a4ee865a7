// Internal to the kernels layer: one parallel pass of several matrix products ("segments")
// over the same tokens - the engine behind MatMulMany, MatMulSwiGlu and friends (matmul.cc).
//
// A segment is one weight matrix times n tokens, with the kernels the table picked for its
// type (f32 / SIMD MatVec and GEMM, the fast-dot kernels on activations prepared once per pass,
// the batched integer-dot kernels on panels of 16 tokens) and what its chunks do with the
// product (store, add into y, or the gated FFN epilogue). RunSegments prepares the activations
// on the calling thread, then splits the rows (and, for long batches, the tokens) of all
// segments into one grid of chunks claimed by the pool's threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/idle_prefetch.h"
#include "core/lane_shares.h"
#include "core/thread_pool.h"
#include "kernels/kernel_table.h"
#include "kernels/matmul.h"

namespace smartgen::kernels::internal {

// The table index of `type`, or -1 when the kernels do not handle it.
int KindIndex(gguf::GgmlType type);
// Whether `table` has both matrix kernels for `type`.
bool HasKernels(const KernelTable& table, gguf::GgmlType type);

// What a chunk does with its product W x.
enum class Epilogue { kStore, kAccumulate, kSwiGlu };

// One matrix product as the chunk loop sees it.
struct Segment {
  MatVecFn vec;
  MatMulFn mul;
  const void* w;
  std::size_t row_bytes;
  std::int64_t rows, cols;
  const float* x;
  float* y;
  Epilogue epilogue = Epilogue::kStore;
  // kSwiGlu: the up projection (rows x cols like w, same x); y = act(W x) * (U x) with act the
  // table's swiglu or geglu (`gated`).
  SwiGluFn gated = nullptr;
  MatVecFn vec_up = nullptr;
  MatMulFn mul_up = nullptr;
  const void* w_up = nullptr;
  std::size_t row_bytes_up = 0;
  // Fast-dot kernels on activations prepared once per pass (single-token passes only):
  // vec_act (vec_act_up for the up projection) replaces vec, reading `act`.
  MatVecActFn vec_act = nullptr;
  MatVecActFn vec_act_up = nullptr;
  PrepareActFn prepare = nullptr;
  const ActQ8* act = nullptr;
  // Decode batches of panel_min_tokens..kActTokens tokens: the batched kernels (mul_act,
  // mul_act_up) on the tokens' panels (panel[g]: tokens [16 g, 16 g + 16)), when the type has one.
  // Smaller batches go token by token through vec_act.
  MatMulActFn mul_act = nullptr;
  MatMulActFn mul_act_up = nullptr;
  const ActPanel* panel = nullptr;
  std::int64_t panel_min_tokens = 0;  // set by MakeSegment for the weight type
  std::int64_t first_chunk = 0;  // in the concatenated row-chunk space of all segments
};

// The segment of W x for the kernels `table` has for w's type (HasKernels must hold).
Segment MakeSegment(const KernelTable& table, const WeightView& w, const float* x, float* y,
                    Epilogue epilogue);
// The gated FFN input's segment: out = gated(gate x, up x), each projection with its own kernels
// (the types may differ), both on the one prepared input. HasKernels must hold for both types.
Segment MakeGatedSegment(const KernelTable& table, const WeightView& gate, const WeightView& up,
                         const float* x, float* out, SwiGluFn gated);

// Runs up to kMaxSegments products of n tokens in one parallel pass. Work is a grid of chunks:
// row chunks of `chunk_rows` (the row chunks of all segments, concatenated) times token chunks
// of `chunk_tokens`. Every output element is computed the same way whatever the chunking.
// Fills the segments' act / panel pointers (prepared activations) as a side effect.
// A single-token pass also prefetches, on each thread that runs out of chunks, that thread's
// lane of the pass `next` (PlanIdlePrefetch).
inline constexpr int kMaxSegments = 8;
void RunSegments(const KernelTable& table, Segment* segs, int n_segs, std::int64_t n,
                 core::ThreadPool* pool, const NextPass* next = nullptr);

// Runs chunk (rows [r0, r1), tokens [t0, t1)) of segment s, whose activations are prepared.
void RunChunk(const KernelTable& table, const Segment& s, std::int64_t r0, std::int64_t r1,
              std::int64_t t0, std::int64_t t1);

// Runs row chunks [first, first + count) of a single-token pass cut into chunk_rows-row chunks
// (the segments' first_chunk set): one RunChunk per segment they cover, so a run of neighbouring
// chunks is read in one kernel call per product.
void RunRowChunks(const KernelTable& table, const Segment* segs, int n_segs,
                  std::int64_t chunk_rows, std::int64_t first, std::int64_t count);

// Prepares, on the calling thread, the activations of the n tokens of every segment with a
// fast-dot kernel, once per distinct input (q/k/v and gate/up share theirs): s.act[t] for token
// t (and s.panel for batches). The ActQ8s live in `acts`, their arrays in this thread's scratch
// slot 5, so they stay valid until this thread prepares again.
void PrepareSegmentActs(Segment* segs, int n_segs, std::int64_t n, std::vector<ActQ8>& acts,
                        std::vector<ActPanel>& panels);

// A single-token pass on several threads is cut into at least kVecChunksPerThread chunks per
// thread (fewer bytes than kVecChunkBytes each), claimed lane by lane (core::LaneClaims): a thread
// claims runs of its own lane's chunks, as many as hold at most kVecRunBytes of weights (one at
// least, kVecMaxRun at most), and reads each product's rows of a run in one kernel call (two
// streams over the whole run, row_streams.h); the others' chunks it takes one at a time. So a
// thread reads its lane of a SmolLM2-135M pass (up to 2 MiB) as one run but for the lane's last
// chunk, and a larger lane in 2 MiB runs; the fine grid keeps the lanes even and the ends of the
// lanes to whichever thread gets there first. Against 4 chunks per thread claimed one at a time,
// two threads of the AMD EPYC Zen 4 VM ran the team step's passes 1.04-1.07x as fast on
// SmolLM2-135M and level on Qwen2.5-0.5B, whole SmolLM2 decodes mostly 1.03-1.12x (bench_kernels'
// BM_ChunksPerThread, bench engine; docs/RESULTS.md, issue 14). The price: a thread preempted
// inside a run holds the rest of it until it runs again (SmartGen's TTST and TBT in the
// disaggregated run measured level over 16 pairs).
inline constexpr int kVecChunksPerThread = 16;
inline constexpr int kVecMaxRun = 15;
inline constexpr std::size_t kVecRunBytes = std::size_t{2} << 20;
// Sets them (counts at least 1) for later passes: for benchmarks that compare chunkings in one
// process (BM_ChunksPerThread); not while a pass runs.
void SetVecChunking(int chunks_per_thread, int max_run, std::size_t run_bytes);
// The own-lane run, in chunks, of a pass of chunk_rows-row chunks whose longest row has
// max_row_bytes bytes.
std::int64_t VecOwnRun(std::int64_t chunk_rows, std::size_t max_row_bytes);

// Rows per chunk of a single-token pass on `threads` > 1 threads over matrices of `total_rows`
// rows in all, the longest row `max_row_bytes` bytes (a multiple of 16 rows).
std::int64_t VecChunkRows(std::int64_t total_rows, std::size_t max_row_bytes, int threads);

// How much of its lane of the next pass a waiting thread prefetches: L2-sized (1-2 MiB on the
// x86 cores of docs/RESULTS.md); 1 MiB and 4 MiB measured alike, 64 KiB gained half as much.
inline constexpr std::size_t kIdlePrefetchBytes = std::size_t{1} << 20;

// The IdlePrefetch plan of a single-token pass over `next` on `threads` threads: for each lane
// (core::LaneClaims over the pass's chunks), the first kIdlePrefetchBytes of the rows that lane
// reads first, per matrix in the pass's order (a gated pass: half for the gate rows, half for
// the up rows). Empty for one thread or an empty `next`.
core::IdlePrefetch PlanIdlePrefetch(const NextPass& next, int threads,
                                    const core::LaneShares* shares = nullptr);

}  // namespace smartgen::kernels::internal
