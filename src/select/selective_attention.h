// SelectiveAttention: a model::AttentionOverride that attends a decode token to a chosen subset
// of each (layer, KV head)'s prompt blocks plus the generated tail (positions from
// n_prompt_tokens on, always attended). One AttendBlocks call per KV head over the chosen
// blocks' views, so choosing every block is dense attention up to float rounding (tested
// through model::Forward to 1e-5 on the logits).
//
// What to attend is delegated to a BlockChooser: the on-demand policy, the on-demand policy
// plus what the proactive path already delivered, or everything. The decode node's real
// override (fetching missing blocks, merging by LSE when they land) lives in the node layer;
// this one assumes the chosen blocks are readable in `kv` (the in-process evaluator's case).
//
// Thread-safety: one per sequence; Attend is called from the forward pass's thread.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/attention.h"
#include "kv/sequence_kv.h"
#include "model/forward.h"
#include "model/model_config.h"
#include "select/layer_selection.h"

namespace smartgen::select {

class BlockChooser {
 public:
  virtual ~BlockChooser() = default;
  // q: [n_heads][head_dim] post-RoPE queries of the token at `pos` in `layer`. Fills
  // out->heads[h] (ascending prompt block indices) for every KV head. An error aborts the pass.
  virtual Status Choose(int layer, const float* q, std::int64_t pos, LayerSelection* out) = 0;
};

// Chooses every prompt block (dense attention through the selective path).
class AllBlocksChooser final : public BlockChooser {
 public:
  AllBlocksChooser(int n_kv_heads, std::int32_t n_prompt_blocks)
      : n_kv_heads_(n_kv_heads), n_blocks_(n_prompt_blocks) {}
  Status Choose(int layer, const float* q, std::int64_t pos, LayerSelection* out) override;

 private:
  int n_kv_heads_;
  std::int32_t n_blocks_;
};

// Views of the chosen prompt blocks of (layer, head) clipped to [0, n_prompt_tokens), then of
// the tail [n_prompt_tokens, end_pos], appended to `out` in position order.
void SelectedRefs(const kv::SequenceKv& kv, int layer, int head, std::int64_t n_prompt_tokens,
                  const std::vector<std::int32_t>& blocks, std::int64_t end_pos,
                  std::vector<kernels::KvBlockRef>* out);

class SelectiveAttention final : public model::AttentionOverride {
 public:
  // `kv`, `chooser` are borrowed. Prompt blocks cover [0, n_prompt_tokens) of `kv`.
  SelectiveAttention(const model::ModelConfig& config, const kv::SequenceKv* kv,
                     std::int64_t n_prompt_tokens, BlockChooser* chooser);

  Status Attend(int layer, const float* q, std::int64_t pos, float* out) override;

  // The selection the last Attend used in `layer`.
  const LayerSelection& last(int layer) const { return last_[layer]; }

 private:
  const model::ModelConfig& config_;
  const kv::SequenceKv* kv_;
  std::int64_t n_prompt_tokens_;
  BlockChooser* chooser_;
  std::vector<LayerSelection> last_;       // [n_layers]
  std::vector<kernels::KvBlockRef> refs_;  // scratch
  std::vector<float> lse_;                 // scratch [n_group]
};

}  // namespace smartgen::select
