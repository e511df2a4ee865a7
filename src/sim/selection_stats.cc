#include "sim/selection_stats.h"

#include <algorithm>
#include <cmath>

namespace smartgen::sim {
namespace {
constexpr std::string_view kSelectionNames[] = {"random-weights", "trained"};
}  // namespace

double SelectionStats::Churn(int step) const {
  if (step <= 1) return 1.0;
  return std::clamp(churn_step2 * std::pow(step / 2.0, -churn_decay), 0.0, 1.0);
}

double SelectionStats::FirstStepPresent(double p) const {
  p = std::clamp(p, 0.0, 1.0);
  return 1.0 - std::pow(1.0 - p, std::max(1.0, first_step_lift));
}

std::span<const std::string_view> SelectionStatsNames() { return kSelectionNames; }

Result<SelectionStats> SelectionStatsByName(std::string_view name) {
  SelectionStats s;
  if (name == "random-weights") {
    // Fitted as described in the header: step 1 present 40 % of the score-selected blocks at
    // a 15.2 % proactive share (lift 3.1); step 2: 324 new of 2880 (0.1125); step 60: 0.020.
    s.source = "fitted to docs/RESULTS.md SmartGen R = 4, 4096 tokens (random weights)";
    return s;
  }
  if (name == "trained") {
    s.name = "trained";
    s.first_step_lift = 3.1;
    s.churn_step2 = 0.05;
    s.churn_decay = 0.5;
    s.predictor_hit = 0.74;
    s.source = "assumption: steadier selections than random weights; predictor hit 0.74 as "
               "measured on stories260K (docs/RESULTS.md, selection accuracy)";
    return s;
  }
  return NotFound("no selection statistics '{}'; known: random-weights trained", name);
}

}  // namespace smartgen::sim
