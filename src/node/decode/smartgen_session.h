// SmartgenSession: one request's SmartGen state on the decode node - the parallel on-demand
// path (DESIGN.md section 4.2) as a model::AttentionOverride, plus what the proactive and
// speculative paths deliver.
//
// Before decoding: the prefill node sends every layer's block summaries and the manifest of
// its proactive blocks; the request may start (Ready) when all have arrived and every manifest
// block is present.
// Per decode step and layer (Attend):
//   - every block present (the request is exact) or the layer complete: dense attention;
//   - else: select blocks per KV head from the summaries and the query (sinks, local window,
//     top budget); request the missing ones in one batched high-priority pull (and tell the
//     prefill node, so its speculative stream skips them); attend over the present selected
//     blocks (with attend_present, the default: every present block) and the generated tail
//     while the pull is in flight; when it lands, attend over the
//     fetched blocks and merge by log-sum-exp. Layer l+1's predicted blocks (layer l's choice)
//     are requested right after layer l's own, while layer l runs - once the prediction has
//     been checked (scored, not fetched) on select::kPredictionWarmupBlocks blocks, and only
//     while at least half of the predicted blocks turn out to be selected (a wrong guess costs
//     link time the real fetches need: select::UsePrediction).
//   - the first step also takes the blocks the prefill node's own run of it selected (exact
//     attention mass; AddFirstStep), ranked first, and waits for them up to first_wait_ms;
//   - the wait for the fetch is bounded (SmartgenOptions::wait_bound_ms, by default about the
//     layer's own local attention time): what has not landed is left out of this step and
//     used from the step it lands in; fetches are ranked by score and sized by the link rate;
//   - a window layer (select/needed_blocks.h: a sliding-window layer, window-aware) has no
//     summaries and selects its needed blocks - all pushed by the prefill node, so never fetched
//     or predicted - and is dense once they are here; its blocks before the window are never
//     awaited or attended, and the request is exact when every *needed* block is present;
//   - if the link dies or a fetch does not land within the step timeout, the missing KV is
//     recomputed here from the prompt
//     (Recompute), the request becomes exact, and decoding continues with the right answer.
//
// Thread-safety: Attend/Ready run on the decode engine thread; Add*/OnLinkDown on the transfer
// callback thread; stats are read after the request finished.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "core/thread_pool.h"
#include "kv/residency.h"
#include "kv/sequence_kv.h"
#include "model/forward.h"
#include "node/decode/head_attention.h"
#include "node/decode/staged_copies.h"
#include "select/block_summary.h"
#include "select/needed_blocks.h"
#include "select/on_demand.h"
#include "select/profile.h"
#include "select/smartgen_options.h"

namespace smartgen::node {

class SmartgenSession final : public model::AttentionOverride {
 public:
  // Posts a batched on-demand pull of `keys` (and tells the prefill node); returns at once.
  using FetchFn = std::function<Status(const std::vector<kv::BlockKey>& keys)>;
  // Computes every absent prompt block here and marks it present.
  using RecomputeFn = std::function<Status()>;

  SmartgenSession(const model::ModelConfig& config, kv::SequenceKv* kv, kv::Residency* residency,
                  std::int64_t n_prompt, const select::SmartgenOptions& options,
                  const select::Profile* profile, const select::NeededBlocks& needed,
                  FetchFn fetch, RecomputeFn recompute, core::Nanos step_timeout);

  // Control-message intake (any thread).
  Status AddSummaries(std::span<const std::byte> wire);
  Status AddManifest(int layer, const std::vector<kv::BlockKey>& blocks);
  // The blocks the prefill node's run of the first decode step selected in `layer`, best
  // first (SmartgenOptions::first_step); they are on their way (marked requested).
  Status AddFirstStep(int layer, const std::vector<kv::BlockKey>& blocks);
  void OnLinkDown();

  // Every layer's summaries and manifest (and, with first_step, first-step manifest) arrived,
  // and every proactive manifest block is present - or, with first_step, first_wait_ms has
  // passed since PrefillDone arrived (`prefill_done_at`): a proactive set still on the link
  // does not hold token 2 back; the first step waits for what it selects of it until then.
  // Engine thread.
  bool Ready(core::Nanos prefill_done_at);
  bool exact() const { return exact_at_ != 0; }
  // Called once, on the engine thread, when the request becomes exact.
  void set_on_exact(std::function<void()> fn) { on_exact_ = std::move(fn); }
  // The KV link's measured receive rate in bytes/s (0 = unknown); sizes the fetches. Set before
  // decoding starts; called on the engine thread once per step.
  void set_link_rate(std::function<double()> fn) { link_rate_ = std::move(fn); }
  // The request's staged copies (DecodeKvStore), applied before each step and in Ready(); set
  // before decoding starts; may stay null (nothing is staged then).
  void set_staged(StagedCopies* staged) { staged_ = staged; }
  // The pool a step's attention spreads its KV heads over (may stay null: the engine thread
  // alone). Set before decoding starts.
  void set_pool(core::ThreadPool* pool) { pool_ = pool; }

  Status Attend(int layer, const float* q, std::int64_t pos, float* out) override;
  // Exact: the forward pass may attend densely from now on, as for a request holding its KV.
  bool Done() const override { return exact(); }

  // time_to_exact_ms, bytes_by_path, on_demand_ratio, per-layer stall, ... `start` is the
  // request's start on this node.
  // blocks_received: every verified block copy written for the request; of which
  // requested_received arrived while asked for on demand.
  nlohmann::json Stats(core::Nanos start, std::uint64_t blocks_received,
                       std::uint64_t requested_received) const;

 private:
  Status AttendDense(int layer, const float* q, std::int64_t pos, float* out);
  // Marks the absent blocks of `sel` (in `layer`) requested and fetches them; the keys that
  // still need to arrive are appended to `missing` when not null.
  Status Request(int layer, const select::LayerSelection& sel, std::vector<kv::BlockKey>* missing);
  // Marks the absent ones of `keys` requested and fetches them in one batch.
  Status RequestKeys(std::span<const kv::BlockKey> keys);
  // Blocks one layer-step asks for at most (SmartgenOptions::max_fetch_blocks or the link rate).
  std::int64_t FetchCap() const;
  // Bytes one fetched block takes on the wire (int8 with SmartgenOptions::int8_wire).
  double WireBlockBytes() const;
  // How long layer `layer` waits for its fetch (SmartgenOptions::wait_bound_ms or auto).
  core::Nanos WaitBound(int layer) const;
  // Per-step selection statistics: score-selected blocks never selected before in the layer.
  void CountFresh(int layer, const select::LayerSelection& sel);
  // Per-step statistics: the share of the selection's bound attention mass that was present.
  void RecordPresence(int layer, const select::LayerSelection& sel);
  // Adds the prefill node's first-step blocks of `layer` to `sel` the first time the layer
  // runs; true then (the step waits for them up to first_wait_ms).
  bool TakeFirstStep(int layer, select::LayerSelection* sel);
  Status Recover(const Status& why);
  void CheckExact();
  // Predicts layer l+1's blocks from layer l's choice: scored only while unchecked, requested
  // while the prediction pays (select::UsePrediction).
  void RequestPredicted(int layer);
  // Counts how many of `layer`'s predicted requests the real selection used.
  void ScorePrediction(int layer, const select::LayerSelection& sel);

  const model::ModelConfig& config_;
  kv::SequenceKv* kv_;
  kv::Residency* residency_;
  std::int64_t n_prompt_;
  select::SmartgenOptions options_;
  const select::Profile* profile_;
  FetchFn fetch_;
  StagedCopies* staged_ = nullptr;
  core::ThreadPool* pool_ = nullptr;
  RecomputeFn recompute_;
  core::Nanos step_timeout_;  // longest wait of one layer-step for its fetch
  std::function<void()> on_exact_;
  std::function<double()> link_rate_;
  select::NeededBlocks needed_;  // window layers and what the decode needs
  select::OnDemandSelector selector_;

  mutable std::mutex mu_;  // guards summaries_, manifest_, link_down_
  std::vector<std::unique_ptr<select::LayerSummaries>> summaries_;  // [n_layers]
  std::vector<std::vector<kv::BlockKey>> manifest_;                 // [n_layers]
  std::vector<std::uint8_t> manifest_seen_;                         // [n_layers]
  std::vector<std::vector<kv::BlockKey>> first_step_;               // [n_layers], until used
  std::vector<std::uint8_t> first_step_seen_;                       // [n_layers]
  std::vector<std::uint8_t> first_step_used_;                       // [n_layers], engine thread
  kv::BlockSet incoming_;  // proactive and first-step blocks: pushed, so never fetched
  std::atomic<bool> link_down_{false};

  core::Nanos exact_at_ = 0;
  core::Nanos first_step_until_ = 0;  // the first step waits for its blocks until then (engine thread)
  bool recovered_ = false;
  // Engine-thread statistics.
  std::int64_t steps_ = 0;            // layer-steps through the selective path
  std::int64_t selected_ = 0, missing_ = 0;
  std::int64_t blocks_fetched_ = 0;   // pulled on demand (predicted included)
  std::int64_t summary_bytes_ = 0, proactive_blocks_ = 0;
  std::int64_t first_step_blocks_ = 0;  // announced by the prefill node (under mu_)
  std::vector<double> layer_stall_ms_;     // [n_layers]
  std::vector<double> local_ms_;           // [n_layers] EWMA of the local attention time
  // Time of the selective layer-steps by phase, summed: selection (scores, bookkeeping, the
  // fetch requests), local attention over what is here, the merge of what landed in time and
  // the per-step statistics (the link waits are layer_stall_ms_).
  double select_ms_total_ = 0, local_ms_total_ = 0, merge_ms_total_ = 0;
  double wait_bound_ms_total_ = 0;  // the bounds of the layer-steps that waited
  // The same phases per decode step (first 64), with the step's own time (its duration less
  // its link waits, taken at the next step's start): where a first step's extra time goes.
  struct StepPhases {
    double own = 0, select = 0, local = 0, merge = 0;
    std::int64_t requested = 0;  // blocks asked for on demand (predicted included)
    std::int64_t attended = 0;   // blocks the local attention read, over layers and KV heads
  };
  StepPhases step_phases_;
  std::vector<StepPhases> phases_per_step_;
  core::Nanos first_attend_at_ = 0;  // the first step's start (its layer 0)
  std::int64_t waited_layer_steps_ = 0;
  core::Nanos step_start_ = 0;
  double step_ms_ = 0;                     // EWMA of a decode step's duration
  double step_compute_ms_ = 0;             // EWMA of a step's duration less its link waits
  double step_stall_ms_ = 0;               // link waits of the step running
  double link_bytes_per_s_ = 0;            // the link's receive rate at the step's start
  std::int64_t late_blocks_ = 0;           // selected but not present when the layer attended
  std::int64_t fetch_capped_ = 0;          // missing blocks not asked for (beyond the cap)
  double step_mass_ = 0, step_present_mass_ = 0;
  std::vector<double> step_present_share_;  // per step (first 64): present share of bound mass
  std::vector<double> step_ratio_;         // on-demand ratio per decode step (first 64)
  std::vector<double> step_stall_per_step_;  // link waits per decode step, ms (first 64)
  std::vector<double> step_churn_;         // selection churn per decode step (first 64; 1 at step 1)
  std::int64_t churn_scored_ = 0, churn_changed_ = 0;  // selector counts at the last step's end
  kv::BlockSet ever_selected_;         // score-selected by some step (engine thread)
  std::int64_t step_fresh_ = 0, step_scored_ = 0;      // of this step: new / score-selected
  std::int64_t fresh_total_ = 0, fresh_scored_ = 0;    // the same over steps 2..
  std::vector<double> step_fresh_share_;   // per step (first 64): new share of the score-selected
  std::int64_t step_selected_ = 0, step_missing_ = 0;
  std::vector<kv::BlockKey> scratch_keys_;
  int predicted_layer_ = -1;                    // the layer `predicted_keys_` guess at
  std::vector<kv::BlockKey> predicted_keys_;    // the guess's absent blocks (asked for or not)
  std::int64_t predicted_ = 0, predicted_hits_ = 0;  // checked against the real selection
  std::int64_t predicted_fetched_ = 0;               // of the guesses' blocks, those requested
  std::vector<kernels::KvBlockRef> refs_;
  std::vector<std::vector<kernels::KvBlockRef>> head_refs_;  // [n_kv_heads] of the local pass
  HeadAttention heads_;
  std::vector<std::uint8_t> selected_mask_;  // [n_blocks] scratch of one head's selection
  std::vector<float> o2_, lse2_;
  std::vector<float> head_lse_;  // [n_kv_heads][n_group] LSE of the local pass
};

}  // namespace smartgen::node
