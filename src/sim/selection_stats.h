// SelectionStats: a statistical model of which blocks SmartGen's on-demand selection picks
// step to step, where the real decision depends on attention scores the simulator does not
// compute (issue 13: "draws from a selection-statistics model measured on them").
//
// Per (request, layer), with k = the blocks the on-demand budget selects by score (all KV
// heads; sinks and local window excluded: those are always pushed):
//   - step 1 (token 2) selects k blocks none of which were selected before; a block is
//     present with probability 1 - (1 - p)^first_step_lift, p = share of the never-selected
//     non-edge blocks that are present (the proactive set: ranked by the request's own scores,
//     so it covers step 1 better than a random set of the same size: lift > 1);
//   - step t >= 2 selects churn(t) x k blocks never selected before, present with
//     probability p (uniform); the rest of its selection repeats earlier choices (present once
//     their fetch landed). churn(t) = churn_step2 x (t / 2)^-churn_decay.
//   - predictor_hit: share of layer l+1's new blocks that layer l's choice predicts; the decode
//     node fetches those one layer early when it is at least 0.5 (the node's rule).
//
// "random-weights-2026-11-30" is fitted to the per-step trace of the node before issue 15 (no
// selection hysteresis; docs/RESULTS.md, SmartGen at R = 4, 4096 tokens, SmolLM2-135M shape
// with random weights: on-demand ratio 0.548 at step 1, 0.091 at step 2, 0.01-0.014 by step
// 60, 0.033 over the request, 27.4 MB fetched on demand). "random-weights" is the node now
// (hysteresis 0.3): the same step-1 lift, and the churn the 2026-12-01 sweep recorded
// (selection_churn 0.004-0.0065 per step, next-layer predictor hit 0.06-0.14). "trained" is
// an assumption for models with trained weights (predictor hit 0.74 as measured on
// stories260K). Replay: SelectionStatsFromRecord takes a bench ttst record's own per-step
// churn, absent share and predictor hit rate (selection_fresh_per_step,
// on_demand_ratio_per_step, prediction_hit_rate).
//
// Thread-safety: plain data.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace smartgen::sim {

struct SelectionStats {
  std::string name = "random-weights";
  double first_step_lift = 3.1;
  double churn_step2 = 0.1125;
  double churn_decay = 0.51;
  double predictor_hit = 0.125;
  // Replayed: the recorded churn of steps 1, 2, ... (index step - 1); beyond it the model.
  std::vector<double> churn_per_step;
  // Replayed: how many blocks the prefill node's first step pushed (-1: the model decides).
  double first_step_blocks = -1;
  // Replayed: the share of each step's selection that was not on the decode node (the
  // record's on_demand_ratio_per_step, index step - 1); beyond it the model decides (step 1:
  // the lift, later steps: the present share).
  std::vector<double> absent_per_step;
  std::string source;

  // Share of the score-selected blocks that are new at decode step `step` (1 = token 2).
  double Churn(int step) const;
  // Probability that a block selected at step 1 is present when a share p of the candidates is.
  double FirstStepPresent(double p) const;
  // The recorded absent share of step `step`'s selection, or -1 where none was recorded.
  double Absent(int step) const;
};

Result<SelectionStats> SelectionStatsByName(std::string_view name);
// `base` with what a bench ttst record measured: selection_churn_per_step (replayed step by
// step), selection_churn (the churn after the recorded steps), prediction_hit_rate,
// first_step_blocks (the prefill node's prefill_stats.smartgen.first_step_blocks),
// on_demand_ratio_per_step (each step's absent share).
// kNotFound when the record has none of them.
Result<SelectionStats> SelectionStatsFromRecord(const nlohmann::json& record, const SelectionStats& base);
std::span<const std::string_view> SelectionStatsNames();

}  // namespace smartgen::sim
