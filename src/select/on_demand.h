// On-demand selection (DESIGN.md section 4.2): per decode step and layer, which prompt blocks
// each KV head attends to. The caller splits the result into present and missing blocks with
// kv::Residency, requests the missing ones in one batch, and attends (SelectiveAttention).
//
// Per KV head: the sink blocks, the local window (the last prompt blocks), and the top-`budget`
// other blocks by Quest upper bound (block_summary.h) for the step's query, maximised over the
// group's query heads. Layers the profile marks dense select every block (the proactive path
// pushes them in full). With no profile, no layer is dense and every head gets the same
// budget (policy_note() says so).
//
// Window layers (SetNeeded; needed_blocks.h): such a layer's selection is its needed blocks,
// unscored (empty `scores`) - required, never ranked or cut by the budget - and nothing before
// them. The budget and the scoring apply to the other layers only.
//
// Next-layer prediction: PredictNext(l) returns layer l's selection for layer l+1 (adjacent
// layers attend to similar blocks; the eval reports the hit rate). The caller requests the
// predicted blocks that are absent while layer l computes, and fetches only
// SelectionDifference(actual, predicted) once layer l+1's query is known.
//
// Cost per layer: n_kv_heads * n_blocks * n_group * 2 * head_dim multiply-adds plus a partial
// sort. Thread-safety: one selector per sequence (it keeps scratch and the last selections).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "select/block_summary.h"
#include "select/layer_selection.h"
#include "select/needed_blocks.h"
#include "select/profile.h"

namespace smartgen::select {

struct OnDemandOptions {
  // Top blocks per KV head chosen by score, besides sinks and the local window.
  // budget_blocks > 0 fixes it; 0 takes max(min_budget_blocks, ceil(budget_fraction * n_blocks)).
  std::int32_t budget_blocks = 0;
  float budget_fraction = 0.125f;
  std::int32_t min_budget_blocks = 4;
  std::int32_t sink_blocks = 1;   // first prompt blocks, always selected (attention sinks)
  std::int32_t local_blocks = 2;  // last prompt blocks, always selected (recency)
  // Heads whose profile streaming score is at least this select only sinks + local window
  // (0 = off). Needs a profile.
  float streaming_threshold = 0.0f;
  // Follow the profile's dense layers (select everything there).
  bool use_dense_layers = true;
  // Stable selection: a block this layer chose at the previous step keeps its place unless
  // another outscores it by more than this many logits (scaled bound q.k / sqrt(head_dim)),
  // so a step does not chase a new set of blocks each time scores barely move. 0 = off.
  float hysteresis = 0.3f;
};

class OnDemandSelector {
 public:
  // n_prompt_blocks: blocks per (layer, KV head) of the prompt. `profile` may be null; it is
  // borrowed and must outlive the selector.
  OnDemandSelector(const model::ModelConfig& config, std::int32_t n_prompt_blocks,
                   const OnDemandOptions& options, const Profile* profile);

  // Makes needed's window layers select their needed blocks (above). Before the first Select;
  // needed's grid must match the selector's.
  void SetNeeded(const NeededBlocks& needed);
  bool IsWindowLayer(int layer) const { return window_first_[layer] >= 0; }
  // A window layer's selection (it needs no summaries): what Select gives there.
  void SelectWindow(int layer, LayerSelection* out);

  // Top blocks chosen by score per head (the resolved budget).
  std::int32_t budget() const { return budget_; }
  std::int32_t n_prompt_blocks() const { return n_blocks_; }
  bool dense(int layer) const { return dense_[layer] != 0; }
  // Where the policy's priors come from, for the caller's log.
  const std::string& policy_note() const { return note_; }

  // q: [n_heads][head_dim] post-RoPE queries of the step in `layer` (query heads of KV head h
  // are h*n_group .. h*n_group + n_group - 1). `summaries` are the layer's. Fills out->heads.
  void Select(int layer, const float* q, const LayerSummaries& summaries, LayerSelection* out);
  // Prediction for layer + 1: what Select last chose in `layer` (every block when layer + 1 is
  // dense; empty before the first Select of `layer`).
  void PredictNext(int layer, LayerSelection* out) const;
  // Share of the scored blocks chosen by Select that the same layer had not chosen the step
  // before (0 before two steps).
  double churn() const { return scored_ > 0 ? static_cast<double>(changed_) / static_cast<double>(scored_) : 0.0; }
  // The counts behind churn(), summed over every Select since the second step of each layer.
  std::int64_t scored_blocks() const { return scored_; }
  std::int64_t changed_blocks() const { return changed_; }

 private:
  void SelectAll(LayerSelection* out) const;
  // Blocks [first, n_blocks) of every head, unscored.
  void SelectFrom(std::int32_t first, LayerSelection* out) const;

  int n_layers_, n_kv_heads_, n_group_, head_dim_;
  std::int32_t n_blocks_;
  OnDemandOptions options_;
  const Profile* profile_;
  std::int32_t budget_;
  std::vector<std::uint8_t> dense_;      // [n_layers]
  std::vector<std::uint8_t> streaming_;  // [n_layers * n_kv_heads]
  std::vector<std::int32_t> window_first_;  // [n_layers] a window layer's first block; -1 = none
  std::string note_;
  std::vector<LayerSelection> last_;  // [n_layers]
  std::vector<float> scores_;         // scratch [n_blocks]
  std::vector<std::int32_t> order_;   // scratch [n_blocks]
  std::vector<std::uint8_t> previous_;  // scratch [n_blocks]: chosen by the layer's last step
  std::int64_t scored_ = 0, changed_ = 0;
};

}  // namespace smartgen::select
