// Proactive ranking (DESIGN.md section 4.1): what the prefill node pushes while prefill runs.
//
// Per request, before prefill: PlanProactiveBudget splits the byte budget (what the link
// carries during prefill; ProactiveBudgetBytes) into, in this order of precedence:
//   1. every layer's summary message (block_summary.h);
//   2. every layer's sink and last prompt blocks (step 1 needs every layer: breadth-first);
//   3. the profile's dense layers in full, as far as the rest allows (a dense layer that does
//      not fit is treated as a normal layer, and the note says so);
//   4. an equal share of what is left for every non-dense layer, filled by rank.
// Per layer, as soon as prefill has computed it: PlanLayer ranks the layer's other blocks by
// prior x request score, where the prior comes from the profile (prior_floor + (1 -
// prior_floor) * frequency of the block's relative position; 1 without a profile) and the
// request score is the SnapKV-style attention of the last prompt queries (RequestScores),
// comparable across heads (each head's scores are probability masses), and returns that
// layer's push list (its share) and the rest in importance order (the speculative path's).
// ProactiveQueue merges layer lists breadth-first: items carry a round (0 = sinks, last blocks
// and dense layers; r >= 1 = the r-th n_kv_heads blocks of a layer's ranking) and leave by
// (round, layer), so a link slower than estimated still covers every layer.
//
// Window layers (needed_blocks.h; a sliding-window model, window-aware): such a layer sends no
// summaries and pushes exactly its needed blocks, in round 0, most recent first, with the
// sinks and last blocks of the other layers (step 2 above); it has no `rest` and takes no
// share: the ranking, the shares and the speculative order run over the other layers only.
//
// Without a profile: sinks + recent + request-specific scores, and ProactiveBudget::note says so.
// Thread-safety: the functions are pure; ProactiveQueue is not synchronised.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kv/sequence_kv.h"
#include "model/model_config.h"
#include "select/layer_selection.h"
#include "select/needed_blocks.h"
#include "select/profile.h"

namespace smartgen::select {

struct ProactiveOptions {
  std::int32_t sink_blocks = 1;  // first prompt blocks of every (layer, head)
  std::int32_t last_blocks = 2;  // last prompt blocks of every (layer, head)
  float prior_floor = 0.1f;      // a block the profile never saw in the top keeps this prior
  bool use_dense_layers = true;  // push the profile's dense layers in full when they fit
};

// The bytes a link of `link_bytes_per_s` carries during `prefill_seconds`.
inline std::int64_t ProactiveBudgetBytes(double link_bytes_per_s, double prefill_seconds) {
  return static_cast<std::int64_t>(link_bytes_per_s * prefill_seconds);
}
// The same for a transfer ratio R = full KV bytes / (link rate x prefill time).
inline std::int64_t ProactiveBudgetForRatio(std::int64_t full_kv_bytes, double transfer_ratio) {
  return static_cast<std::int64_t>(static_cast<double>(full_kv_bytes) / transfer_ratio);
}

struct ProactiveBudget {
  kv::BlockGrid grid;                      // the prompt's blocks
  NeededBlocks needed;                     // what the decode needs of them (window layers)
  std::size_t block_bytes = 0;             // one block, K and V
  std::int64_t budget_bytes = 0;           // what was asked for
  std::int64_t summary_bytes = 0;          // all layers' summary messages
  std::vector<std::uint8_t> dense;         // [n_layers] pushed in full
  std::vector<std::int64_t> layer_blocks;  // [n_layers] blocks pushed, all heads, all rounds
  std::int64_t planned_bytes = 0;          // summaries + blocks; may exceed budget_bytes only
                                           // when summaries + sinks + last blocks alone do
  std::string note;                        // profile or fallback, and what did not fit
};

// n_prompt_tokens > 0. `profile` may be null (borrowed for the call only); `needed` null means
// every block of every layer (no window layer), else its grid must be the prompt's.
ProactiveBudget PlanProactiveBudget(const kv::KvGeometry& geometry, std::int64_t n_prompt_tokens,
                                    std::int64_t budget_bytes, const Profile* profile,
                                    const ProactiveOptions& options,
                                    const NeededBlocks* needed = nullptr);

// SnapKV-style request scores of one layer: the attention of the last prompt queries to each
// prompt block. q_rows: [n_rows][n_heads * head_dim] post-RoPE queries of prompt positions
// n_prompt_tokens - n_rows .. n_prompt_tokens - 1 (the last prefill chunk's), with `layer`'s
// K/V of [0, n_prompt_tokens) in `kv`. scores: resized to [n_kv_heads][n_blocks]; each head's
// row holds probability masses (mean over the rows and the group's query heads; sums to 1).
// KV heads are split across `pool` (nullptr = this thread). Cost: one GEMM of n_rows * n_heads
// queries against the layer's keys plus the softmaxes (about 8 ms per KV head at 32 rows,
// 4096 tokens, head_dim 64 on one core of the development machine).
void RequestScores(const model::ModelConfig& config, const kv::SequenceKv& kv, int layer,
                   std::int64_t n_prompt_tokens, const float* q_rows, std::int64_t n_rows,
                   std::vector<float>* scores, core::ThreadPool* pool = nullptr);

struct PushItem {
  kv::BlockKey key;
  std::int32_t round = 0;  // breadth-first rank; lower first across layers
  float score = 0;         // prior x request score (0 for sinks, last blocks, dense layers)
};

struct LayerPushPlan {
  int layer = 0;
  std::vector<PushItem> push;  // this layer's proactive list, in push order
  std::vector<kv::BlockKey> rest;  // every other block of the layer, most important first
};

// request_scores: [n_kv_heads][n_blocks] from RequestScores, or empty (profile prior only; with
// neither, recency: later blocks first). `profile` may be null.
LayerPushPlan PlanLayer(const ProactiveBudget& budget, int layer,
                        std::span<const float> request_scores, const Profile* profile,
                        const ProactiveOptions& options);

// Breadth-first merge of layer plans as prefill produces them.
class ProactiveQueue {
 public:
  explicit ProactiveQueue(int n_layers) : layers_(n_layers) {}
  // Adds a layer's push list (any order of layers; each at most once).
  void Add(const LayerPushPlan& plan);
  // The next item among the layers added so far: lowest round, then lowest layer; layer
  // order within a round is kept. nullopt when empty.
  std::optional<PushItem> Pop();
  std::int64_t size() const { return size_; }

 private:
  struct Pending {
    std::vector<PushItem> items;
    std::size_t next = 0;
  };
  std::vector<Pending> layers_;
  std::int64_t size_ = 0;
};

// Every plan's push list merged as ProactiveQueue would give it with all layers added.
std::vector<PushItem> MergeBreadthFirst(std::span<const LayerPushPlan> plans);

}  // namespace smartgen::select
