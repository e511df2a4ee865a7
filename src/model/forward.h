// Forward: the forward pass of every ModelConfig architecture over a batch of sequence
// chunks, on paged KV. Sliding-window layers attend over their window only.
//
// A batch holds one or more chunks; each chunk appends tokens to one sequence's KV cache at
// positions kv->n_tokens() onwards. Prefill is one chunk of many tokens; batched decode is many
// chunks of one token (continuous batching). All chunks share the weight matmuls.
//
// Hooks, per chunk:
//   on_layer_kv - called during the pass as soon as a layer's new K/V rows are in the cache
//                 (the prefill node pushes that layer's blocks from here, layer-wise);
//   on_layer_q  - called with the layer's post-RoPE queries of the chunk's last query_rows
//                 tokens (SnapKV-style scores);
//   attention   - replaces dense attention for a single-token chunk (the decode node attends
//                 over the blocks it holds and fetches the rest: SmartGen's on-demand path).
//
// Micro-batches: the pass is layer-major (every token of the batch finishes layer l before
// layer l+1 starts), but a batch of more than micro_batch_tokens rows runs each layer in
// micro-batches of that many rows, as llama.cpp's n_ubatch: only the residual stream
// ([n_tokens][n_embd] floats) is kept for the whole batch; the norms, projections, attention
// and FFN scratch are sized by the micro-batch, and so is the peak RSS of a long prefill. Per
// layer, first every micro-batch's K/V rows are computed and stored (with the last
// micro-batch's queries), then the hooks run (on_layer_q, then on_layer_kv, per chunk in
// order: the same timing as one chunk, before the layer's attention), then each micro-batch
// attends over the stored K/V (causal: exact) and runs its output projection and FFN. The
// results are those of one chunk: every row is computed the same way whatever the batch.
//
// Thread-safety: a Forward owns scratch buffers; use one per thread. The Model is shared.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/bytes.h"
#include "core/lane_shares.h"
#include "core/result.h"
#include "core/team_stage.h"
#include "core/thread_pool.h"
#include "kernels/team_pass.h"
#include "kv/sequence_kv.h"
#include "model/model.h"

namespace smartgen::model {

// Called after layer `layer`'s K/V for positions [first_pos, first_pos + n_tokens) are stored.
using LayerKvHook = std::function<void(int layer, std::int64_t first_pos, std::int64_t n_tokens)>;
// Called once per layer, after layer `layer`'s K/V of the whole chunk are stored and before
// on_layer_kv, with the post-RoPE queries of the chunk's last n_rows tokens (n_rows =
// min(query_rows, chunk tokens), or every token when query_rows is 0): q [n_rows][n_heads *
// head_dim], valid only during the call. The proactive path scores blocks with the last prompt
// queries (SmartgenOptions::query_window of them).
using LayerQueryHook = std::function<void(int layer, const float* q, std::int64_t n_rows)>;

class AttentionOverride {
 public:
  virtual ~AttentionOverride() = default;
  // q: [n_heads][head_dim] post-RoPE queries of the token at `pos` in `layer`; the token's own
  // K/V row is already in the cache. Writes out[n_heads][head_dim]. An error aborts the pass.
  virtual Status Attend(int layer, const float* q, std::int64_t pos, float* out) = 0;
  // True once the override has nothing left to do (its sequence holds the KV it needs): the
  // caller may drop it and attend densely, as for any other sequence.
  virtual bool Done() const { return false; }
};

struct ForwardChunk {
  kv::SequenceKv* kv = nullptr;
  std::span<const std::int32_t> tokens;  // placed at positions kv->n_tokens() ...
  bool all_logits = false;               // logits for every token, else for the last only
  std::vector<float>* logits = nullptr;  // out: [rows][n_vocab]; nullptr = no logits
  LayerKvHook on_layer_kv;
  LayerQueryHook on_layer_q;
  // Queries on_layer_q receives: the chunk's last query_rows (0 = all). Set it to what the hook
  // reads: queries outside the last micro-batch cost a buffer and a second Q projection of
  // their micro-batches.
  std::int64_t query_rows = 0;
  AttentionOverride* attention = nullptr;  // single-token chunks only
};

// Rows of a micro-batch (see above), the default of ForwardOptions::micro_batch_tokens.
inline constexpr std::int64_t kMicroBatchTokens = 512;

struct ForwardOptions {
  std::int64_t max_context = 0;  // positions allowed per sequence; 0 = the model's n_ctx_train
  // Rows per micro-batch; 0 = kMicroBatchTokens. A value past any batch runs every batch as one
  // chunk (the scratch then grows with the batch; for tests and measurements).
  std::int64_t micro_batch_tokens = 0;
  // A decode step of one sequence (one token, no hooks, no attention override) on a pool of
  // several threads runs its layers as one pool job whose threads share each pass and the
  // attention between them (forward_team.cc); false: as separate pool passes. Both give the same
  // logits bit for bit.
  bool team_decode = true;
};

class Forward {
 public:
  Forward(const Model& model, core::ThreadPool* pool, ForwardOptions options = {});

  const Model& model() const { return model_; }
  std::int64_t max_context() const { return max_context_; }
  // The KV geometry this model needs, for building a BlockPool.
  kv::KvGeometry KvGeometryFor(kv::KvDType dtype, int block_tokens = 16) const;

  // Runs the chunks as one batch. Validates first (token ids, context length, KV capacity,
  // geometry): on error nothing is changed. On success each chunk's kv->n_tokens() has grown
  // by its token count and its logits are filled.
  Status Run(std::span<ForwardChunk> chunks);
  // Run of one chunk without hooks: feeds `tokens` to `kv` (a prefill, or one decode step);
  // `logits` (last token) may be null. A prompt of more than micro_batch_tokens() runs as
  // consecutive Runs of that many tokens (chunk-major: no hook needs a layer of the whole
  // prompt), so even the residual stream is sized by the micro-batch: the same logits as one
  // chunk, validated and KV reserved for the whole prompt first, so an error changes nothing.
  Status RunOne(kv::SequenceKv* kv, std::span<const std::int32_t> tokens, std::vector<float>* logits);
  std::int64_t micro_batch_tokens() const { return micro_batch_; }
  // Rows the activation scratch (all but the residual stream) holds now: its high-water mark.
  std::int64_t scratch_tokens() const { return scratch_tokens_; }
  // Rows the residual stream holds now: its high-water mark.
  std::int64_t residual_tokens() const { return residual_tokens_; }

 private:
  // Rows [begin, begin + n) of the batch: a micro-batch, whose activations are scratch rows
  // [0, n) (the residual x_ is indexed by batch row).
  struct Rows {
    std::int64_t begin = 0, n = 0;
  };
  // Query heads per KV head the single-token attention has room for (the lse it discards).
  static constexpr int kMaxDecodeGroup = 64;
  // K/V bytes per head a team step's thread asks into cache ahead of its attention
  // (kv::SequenceKv::Prefetch): a 256-token context of 64-wide f16 heads, the start of a longer
  // one (whose stream the hardware then prefetches).
  static constexpr std::size_t kAttentionPrefetchBytes = std::size_t{64} << 10;

  Status Validate(std::span<ForwardChunk> chunks) const;
  void EnsureScratch(std::int64_t residual_rows, std::int64_t scratch_rows);
  void PlanQueryTails(std::span<ForwardChunk> chunks, Rows last);
  // Stores K/V of the micro-batch (bias, k-norm, RoPE) and/or prepares its queries (bias,
  // q-norm, RoPE) in place.
  void PrepareRows(std::span<ForwardChunk> chunks, int layer, Rows rows, bool queries, bool kv);
  // x += W in (gemma: x += RmsNorm(W in) * post_norm) for the micro-batch.
  // x[rows] += W in (Gemma: RmsNorm(W in) * post_norm); `next`: the pass that follows.
  void ProjectIntoResidual(const kernels::WeightView& w, const float* in,
                           const std::vector<float>& post_norm, Rows rows,
                           const kernels::NextPass& next);
  // The q/k/v pass of `layer`, or the output head after the last layer.
  kernels::NextPass NextLayerQkv(int layer) const;
  void Attention(std::span<ForwardChunk> chunks, int layer, Rows rows);
  // Attention, output projection and FFN of the micro-batch, whose queries are in q_.
  void FinishLayer(std::span<ForwardChunk> chunks, int layer, Rows rows);
  void ComputeLogits(std::span<ForwardChunk> chunks);
  // forward_team.cc: whether the batch is a single-token step the team path runs, and the
  // layers of such a step (after the embedding, before the logits).
  bool TeamStepApplies(std::span<const ForwardChunk> chunks) const;
  void RunTeamLayers(const ForwardChunk& chunk);
  // The team step's attention for KV head `head`: bias, q/k-norm and RoPE of its query and key
  // heads, its K/V row stored, then its query heads attended.
  void TeamAttendHead(const ForwardChunk& chunk, int layer, int head, std::int64_t pos);
  // The KV blocks of `head` in `layer` visible from position `first_query_pos` on (a sliding
  // layer drops the blocks wholly before the window), into *list (cleared first).
  void LayerBlocks(const ForwardChunk& chunk, int layer, int head, std::int64_t first_query_pos,
                   std::vector<kernels::KvBlockRef>* list) const;

  const Model& model_;
  core::ThreadPool* pool_;
  std::int64_t max_context_;
  std::int64_t micro_batch_;
  bool team_decode_;

  // Per-batch bookkeeping.
  std::vector<std::int64_t> chunk_first_row_;  // first batch row of each chunk
  std::vector<std::int64_t> chunk_first_pos_;  // first position of each chunk
  std::vector<std::int64_t> row_pos_;          // position of each batch row
  std::vector<Rows> micro_batches_;            // in row order; only the first may be short
  // Per chunk, the rows on_layer_q receives: batch rows [first, first + n); buffered in q_tail_
  // at row `offset` when they are not all in the last micro-batch (-1: read from q_ directly).
  struct QueryTail {
    std::int64_t first = 0, n = 0, offset = -1;
  };
  std::vector<QueryTail> tails_;
  std::vector<float> q_tail_;
  // The logits of a batch whose rows go to several chunks, before each takes its own.
  std::vector<float> logits_rows_;
  Status override_status_;
  // The team step's stages, per layer: q/k/v, attention (per KV head), o, gate/up, down.
  int team_layers_ = 0;
  std::unique_ptr<kernels::TeamPass[]> team_passes_;   // 4 per layer
  std::unique_ptr<core::TeamStage[]> team_attention_;  // 1 per layer
  core::AlignedBuffer<float> team_up_;                 // the up product (n_ff)
  core::LaneShares team_shares_;                       // the passes' lanes, from the steps' waits

  // Scratch, [rows][dim] row-major, grown on demand: x_ (the residual) by batch rows, the rest
  // by micro-batch rows.
  std::int64_t residual_tokens_ = 0, scratch_tokens_ = 0;
  core::AlignedBuffer<float> x_, h_, q_, k_, v_, att_, o_, gate_;
};

}  // namespace smartgen::model
