// SmartgenPrefill: one request's proactive path on the prefill node (DESIGN.md section 4.1).
// As each layer finishes in prefill it yields that layer's block summaries, the manifest of
// its proactive blocks (so the decode node knows what to wait for), and the block ranges to
// push: sinks and last blocks, dense layers, then the top blocks by profile prior x the
// attention of the last prompt queries, within the layer's share of a byte budget (what the
// link carries while prefill runs). After prefill it hands over the speculative order of every
// block it did not push.
//
// Thread-safety: called from the prefill's forward thread only.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/thread_pool.h"
#include "kv/sequence_kv.h"
#include "model/model_config.h"
#include "select/smartgen_options.h"
#include "select/block_summary.h"
#include "select/needed_blocks.h"
#include "select/proactive.h"
#include "select/profile.h"
#include "select/speculative.h"
#include "transfer/types.h"

namespace smartgen::node {

class SmartgenPrefill {
 public:
  // `profile` may be null (fallback policy); borrowed for the object's life. `needed`: what
  // the decode needs of the prompt; its window layers push their window first, send no
  // summaries and take no part in the ranking, the first step or the speculative stream.
  SmartgenPrefill(std::uint64_t request_id, const model::ModelConfig& config,
                  const kv::KvGeometry& geometry, std::int64_t n_prompt,
                  const select::SmartgenOptions& options, const select::Profile* profile,
                  std::int64_t budget_bytes, const select::NeededBlocks& needed,
                  core::ThreadPool* pool);

  // The layer's post-RoPE queries of the prompt's last n_rows tokens (model::LayerQueryHook;
  // the prefill node asks Forward for query_window of them): keeps the last query_window rows.
  void OnLayerQuery(int layer, const float* q, std::int64_t n_rows);

  struct LayerOutput {
    std::vector<std::byte> summaries;  // kSummaries message; empty for a window layer
    std::vector<std::byte> manifest;   // kProactiveManifest message
    std::vector<transfer::BlockRange> push;  // the layer's proactive blocks, in push order
  };
  // Layer `layer`'s K/V of the prompt are in `kv`.
  LayerOutput OnLayerDone(int layer, const kv::SequenceKv& kv);

  // The first decode step, run here once prefill is done (SmartgenOptions::first_step): `q` is
  // token 1's post-RoPE query in `layer`. Scores the layer's prompt blocks per KV head by the
  // exact attention mass of that query and keeps each head's top on-demand budget of the
  // blocks not pushed yet as candidates. A window layer has none (its window is pushed).
  void ScoreFirstStep(int layer, const float* q, const kv::SequenceKv& kv);
  // The candidates of every layer, each head's best first (rank-major), at most `max_blocks`
  // (what the link carries within the first step's wait); they count as pushed from here on.
  std::vector<kv::BlockKey> TakeFirstStep(std::int64_t max_blocks);

  // Every block not pushed proactively, in speculative order; and the pushed set (to skip).
  // The speculative order: every block not pushed exactly, pushed (int8) blocks first.
  select::SpeculativeStream TakeSpeculative();
  // What the speculative stream skips: the blocks pushed exactly (none with int8_wire).
  kv::BlockSet SpeculativeSkip() const;
  // How the proactive and first-step blocks travel.
  transfer::WireFormat push_wire() const {
    return options_.int8_wire ? transfer::WireFormat::kInt8 : transfer::WireFormat::kNative;
  }
  const select::ProactiveBudget& budget() const { return budget_; }
  double first_wait_ms() const { return options_.first_wait_ms; }
  const select::SmartgenOptions& options() const { return options_; }
  nlohmann::json Stats() const;

 private:
  std::uint64_t request_id_;
  const model::ModelConfig& config_;
  std::int64_t n_prompt_;
  select::SmartgenOptions options_;
  const select::Profile* profile_;
  core::ThreadPool* pool_;  // for the request scores (the hook runs between forward passes)
  select::ProactiveBudget budget_;
  std::vector<float> last_q_;  // [n_rows][q_dim] of the layer being computed
  std::int64_t last_q_rows_ = 0;
  std::vector<select::LayerPushPlan> plans_;  // [n_layers], filled as layers finish
  kv::BlockSet pushed_;
  std::vector<kv::BlockKey> pushed_order_;  // proactive then first-step blocks, as pushed
  std::int64_t summary_bytes_ = 0;
  std::int64_t pushed_blocks_ = 0;
  std::int64_t first_step_blocks_ = 0;
  struct FirstCandidate {
    int rank;  // in its head's order by mass
    kv::BlockKey key;
  };
  std::vector<FirstCandidate> first_candidates_;
};

}  // namespace smartgen::node
