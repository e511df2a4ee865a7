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
// "random-weights" is fitted to the one recorded per-step trace (docs/RESULTS.md, SmartGen at
// R = 4, 4096 tokens, SmolLM2-135M shape with random weights: on-demand ratio 0.548 at step 1,
// 0.091 at step 2, 0.01-0.014 by step 60, 0.033 over the request, 27.4 MB fetched on demand)
// and then checked across the whole sweep (sim validate). "trained" is an assumption for
// models with trained weights (steadier selections, next-layer predictor hit 0.74 as measured
// on stories260K); no per-step trace of a trained model through the serving path exists yet.
//
// Thread-safety: plain data.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/result.h"

namespace smartgen::sim {

struct SelectionStats {
  std::string name = "random-weights";
  double first_step_lift = 3.1;
  double churn_step2 = 0.1125;
  double churn_decay = 0.51;
  double predictor_hit = 0.125;
  std::string source;

  // Share of the score-selected blocks that are new at decode step `step` (1 = token 2).
  double Churn(int step) const;
  // Probability that a block selected at step 1 is present when a share p of the candidates is.
  double FirstStepPresent(double p) const;
};

Result<SelectionStats> SelectionStatsByName(std::string_view name);
std::span<const std::string_view> SelectionStatsNames();

}  // namespace smartgen::sim
