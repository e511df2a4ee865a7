// ProfileBuilder: measures a Profile (profile.h) from calibration prompts, in process.
//
// For each prompt: prefill with full attention, then `decode_steps` greedy decode steps whose
// attention is computed exactly (dense, through an AttentionOverride) while recording, per
// (layer, KV head) and step, the attention mass of every prompt block (mean over the group's
// query heads). From those: the exact top-`top_blocks` blocks (position frequencies, edge
// counters), the mass on sinks + local window + tail (streaming score), and recall-vs-budget
// with exact (oracle) and summary-score (quest) choices. Finish() picks the dense layers: the
// first `dense_first_layers` (clamped to n_layers / 4, so a small model keeps most layers
// selective), then the layers whose quest recall at `dense_check_budget` is below
// `dense_recall_threshold`, lowest first, up to max_dense_fraction of all layers in total.
//
// Thread-safety: not synchronised; the Forward it is given runs on its thread pool.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/block_pool.h"
#include "model/forward.h"
#include "select/profile.h"

namespace smartgen::select {

struct ProfileOptions {
  int decode_steps = 32;
  // The last prompt tokens to replay as recorded decode steps (the rest is prefilled): 1 for
  // tasks whose answer step is the prompt's last token (kv-retrieval).
  int replay_prompt_tokens = 0;
  // "Top" blocks per KV head for the position frequencies: top_blocks > 0 fixes it, else
  // max(1, ceil(top_fraction * n_blocks)).
  int top_blocks = 0;
  float top_fraction = 0.125f;
  int sink_blocks = 1;
  int local_blocks = 2;
  int n_position_buckets = 16;
  std::vector<int> recall_budgets = {1, 2, 4, 8, 16, 32};
  int dense_first_layers = 2;
  int dense_check_budget = 4;  // must be one of recall_budgets
  float dense_recall_threshold = 0.8f;
  float max_dense_fraction = 0.25f;
};

class ProfileBuilder {
 public:
  // `forward` and `blocks` are borrowed; `blocks` must hold the prompt plus decode_steps tokens.
  ProfileBuilder(model::Forward& forward, kv::BlockPool& blocks, const ProfileOptions& options);
  ~ProfileBuilder();

  // Runs one calibration prompt (BOS included if the model wants one). kInvalidArgument for a
  // prompt shorter than two blocks; errors of the forward pass pass through.
  Status AddPrompt(std::span<const std::int32_t> prompt);
  int n_prompts() const { return n_prompts_; }

  // The profile of the prompts so far: bucket from their lengths. kFailedPrecondition when no
  // prompt was added.
  Result<Profile> Finish() const;

 private:
  class Recorder;

  model::Forward& forward_;
  kv::BlockPool& blocks_;
  ProfileOptions options_;
  int n_prompts_ = 0;
  std::int64_t min_len_ = 0, max_len_ = 0;
  // Accumulators, [layer][head][...] flattened; see profile_builder.cc.
  std::vector<double> pos_top_, pos_seen_;    // [L][H][n_position_buckets]
  std::vector<double> first_top_, last_top_;  // [L][H][kProfileEdgeBlocks]
  std::vector<double> edge_seen_;             // [L][H][kProfileEdgeBlocks] (same for first/last)
  std::vector<double> stream_mass_;           // [L][H]
  std::vector<double> oracle_, quest_;        // [L][n_budgets]
  std::vector<double> samples_;               // [L][H] steps recorded
};

}  // namespace smartgen::select
