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
//   on_layer_q  - called with the layer's post-RoPE queries of the chunk (SnapKV-style scores);
//   attention   - replaces dense attention for a single-token chunk (the decode node attends
//                 over the blocks it holds and fetches the rest: SmartGen's on-demand path).
//
// Thread-safety: a Forward owns scratch buffers; use one per thread. The Model is shared.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/bytes.h"
#include "core/result.h"
#include "core/thread_pool.h"
#include "kv/sequence_kv.h"
#include "model/model.h"

namespace smartgen::model {

// Called after layer `layer`'s K/V for positions [first_pos, first_pos + n_tokens) are stored.
using LayerKvHook = std::function<void(int layer, std::int64_t first_pos, std::int64_t n_tokens)>;
// Called with layer `layer`'s post-RoPE queries of the chunk: q [n_tokens][n_heads * head_dim]
// (valid only during the call). The proactive path scores blocks with the last prompt queries.
using LayerQueryHook = std::function<void(int layer, const float* q, std::int64_t n_tokens)>;

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
  AttentionOverride* attention = nullptr;  // single-token chunks only
};

struct ForwardOptions {
  std::int64_t max_context = 0;  // positions allowed per sequence; 0 = the model's n_ctx_train
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
  // `logits` (last token) may be null. A prompt of more than kMicroBatchTokens runs as
  // consecutive micro-batches of that many tokens (as llama.cpp's n_ubatch), so the activation
  // scratch, and with it the peak RSS of a long prefill, is sized by the micro-batch: the same
  // logits as one chunk (every product is computed the same way whatever the batch), validated
  // and KV reserved for the whole prompt first, so an error changes nothing.
  static constexpr std::int64_t kMicroBatchTokens = 512;
  Status RunOne(kv::SequenceKv* kv, std::span<const std::int32_t> tokens, std::vector<float>* logits);
  // Tokens the activation scratch holds now (its high-water mark).
  std::int64_t scratch_tokens() const { return scratch_tokens_; }

 private:
  Status Validate(std::span<ForwardChunk> chunks) const;
  void EnsureScratch(std::int64_t n_tokens);
  // x += W in (gemma: x += RmsNorm(W in) * post_norm) for the n batch rows.
  void ProjectIntoResidual(const kernels::WeightView& w, const float* in,
                           const std::vector<float>& post_norm, std::int64_t n);
  void StoreKv(std::span<ForwardChunk> chunks, int layer);
  void Attention(std::span<ForwardChunk> chunks, int layer);
  void ComputeLogits(std::span<ForwardChunk> chunks);

  const Model& model_;
  core::ThreadPool* pool_;
  std::int64_t max_context_;

  // Per-batch bookkeeping.
  std::vector<std::int64_t> chunk_first_row_;  // first batch row of each chunk
  std::vector<std::int64_t> chunk_first_pos_;  // first position of each chunk
  std::vector<std::int64_t> row_pos_;          // position of each batch row
  Status override_status_;

  // Scratch, [n_tokens][dim] row-major, grown on demand.
  std::int64_t scratch_tokens_ = 0;
  core::AlignedBuffer<float> x_, h_, q_, k_, v_, att_, o_, gate_, up_;
};

}  // namespace smartgen::model
