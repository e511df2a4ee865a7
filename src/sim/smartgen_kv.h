// SmartgenKv: the residency of one SmartGen request's prompt KV on its decode node, as
// expected block counts per layer (summed over KV heads), driven by SelectionStats.
//
// Each full-attention layer's prompt blocks are split into
//   edges  - sinks and last blocks of every head: pushed with the proactive set, always
//            selected (the on-demand sinks/local window);
//   never-selected blocks: present (proactive or speculative), in a speculative batch on the
//            wire, or absent;
//   selected blocks (by some step): present, requested (fetch on the wire), wanted (absent,
//            not yet requested: a bounded fetch left them for a later step), or deferred
//            (asked for, not awaited: a sliver of a block that rides with a later pull, see
//            DecodeNode::Fetch).
// The prefill node's first step (PlanFirstStep) pre-selects, per layer, the absent part of
// step 1's selection, up to its cap: those blocks are selected and requested (pushed at
// on-demand priority) before the decode node's step 1, which then selects them again.
// Window layers (select/needed_blocks.h: a sliding-window layer whose window leaves out part
// of the prompt, window-aware) are pushed whole with the proactive set, are never selected
// and count as complete; exactness is over the other layers' blocks. Without window_aware,
// or where a window covers the whole prompt, a sliding layer is selective like a global one.
// Counts are doubles (expected values); a request is exact when fewer than half a block is
// missing in all.
//
// The budget per head comes from select::OnDemandSelector (the node's policy) and the
// proactive share per layer from select::PlanProactiveBudget.
//
// Thread-safety: none (one simulation thread).
#pragma once

#include <cstdint>
#include <vector>

#include "select/needed_blocks.h"
#include "select/proactive.h"
#include "sim/model_shape.h"
#include "sim/selection_stats.h"
#include "sim/sim_options.h"

namespace smartgen::sim {

struct LayerDemand {
  double selected = 0;     // blocks this step attends to in the layer (all heads)
  double absent = 0;       // of those, not on the decode node at the start of the layer
  double to_fetch = 0;     // absent and not yet requested: what a fetch may ask for
};

class SmartgenKv {
 public:
  // `needed`: the request's needs (its grid is the prompt's blocks); `layer_proactive_blocks`:
  // PlanProactiveBudget's layer_blocks with the same needs, [n_layers], edges included.
  SmartgenKv(const ModelShape& shape, const select::NeededBlocks& needed,
             const SmartgenSimOptions& options,
             const std::vector<std::int64_t>& layer_proactive_blocks);

  int n_layers() const { return static_cast<int>(layers_.size()); }  // selective layers
  // Whether layer l (model index) has selective state (false: a window layer, complete).
  bool selective(int layer) const { return index_[layer] >= 0; }
  std::int32_t budget() const { return budget_; }
  std::int32_t n_prompt_blocks() const { return n_blocks_; }
  double total_blocks() const { return total_; }

  // Step `step` (1 = the step producing token 2) selects in `layer`: updates the selection
  // state and returns what is missing.
  LayerDemand Select(int layer, int step, const SelectionStats& stats);
  // The prefill node's first step: of step 1's selection (the on-demand budget per head,
  // present with the lift model), the absent blocks, at most `max_blocks` in all (spread over
  // the layers in proportion, as rank-interleaved pushes land), become selected and
  // requested. Returns the blocks to push; call Landed(layer, first_step(layer)) per layer
  // when they arrive.
  double PlanFirstStep(const SelectionStats& stats, double max_blocks);
  double first_step(int layer) const;
  // Blocks of the layer present on the decode node (all heads).
  double present(int layer) const;
  // The decode node requested `n` of the layer's wanted blocks (<= to_fetch) / they landed.
  void Requested(int layer, double n);
  void Landed(int layer, double n);
  // The decode node asked for `n` of the layer's wanted blocks without waiting for them (they
  // travel with a later pull) / they landed.
  void Deferred(int layer, double n);
  void DeferredLanded(int layer, double n);
  double in_flight(int layer) const;  // requested: what the layer waits for
  double wanted(int layer) const;  // selected, absent, not requested

  // Speculative: takes up to max_blocks never-requested absent blocks, spread over layers in
  // proportion to what each lacks (the stream interleaves layers); returns the total taken.
  double TakeSpeculative(double max_blocks);
  // The batch taken last landed (minus whatever was fetched on demand meanwhile).
  void SpeculativeLanded();
  double speculative_remaining() const;  // absent, never requested, not on the wire
  // A wrong prediction: up to `n` absent blocks of `layer` that no step selected are fetched
  // (on the wire until MispredictedLanded); returns how many.
  double Mispredicted(int layer, double n);
  void MispredictedLanded(int layer, double n);
  // The layer's blocks (all heads; 0 for a window layer).
  double layer_blocks(int layer) const;
  // Blocks one step selects in the layer (all heads, edges included; 0 for a window layer).
  double selection_size(int layer) const;

  double missing() const;  // blocks not on the decode node
  bool exact() const { return missing() < 0.5; }
  double duplicate_blocks() const { return duplicates_; }

 private:
  struct Layer {
    double k = 0;         // score-selected blocks per step, all heads
    double edges = 0;
    double never = 0;     // never-selected non-edge blocks
    double never_present = 0;
    double never_fly = 0; // in the speculative batch on the wire
    double never_pred = 0;  // fetched by a wrong prediction, on the wire
    double wanted = 0;    // selected, absent, not requested
    double requested = 0; // selected, fetch on the wire
    double deferred = 0;  // selected, asked for, not awaited
    double selected = 0;  // ever selected (score-selected)
    double p0 = 0;        // never-selected share present when decoding starts (proactive)
    double first = 0;     // pre-selected by the prefill node's first step
  };
  std::vector<Layer> layers_;
  std::vector<int> index_;  // model layer -> layers_ index, -1 for window layers
  std::int32_t n_blocks_ = 0, budget_ = 0;
  double total_ = 0, duplicates_ = 0;
};

}  // namespace smartgen::sim
