// SmartgenSession's statistics (node/decode/smartgen_session.h): the per-step selection,
// presence and freshness figures it records while attending, and the Stats() it reports when
// the request ends.
#include "node/decode/smartgen_session.h"

#include <algorithm>
#include <cmath>

namespace smartgen::node {

void SmartgenSession::CountFresh(int layer, const select::LayerSelection& sel) {
  // Score-selected blocks only: sinks and the local window are chosen at every step.
  const auto n_blocks = static_cast<std::int32_t>(residency_->n_blocks());
  const std::int32_t lo = options_.on_demand.sink_blocks, hi = n_blocks - options_.on_demand.local_blocks;
  for (int h = 0; h < static_cast<int>(sel.heads.size()); ++h) {
    for (std::int32_t b : sel.heads[h]) {
      if (b < lo || b >= hi) continue;
      ++step_scored_;
      if (ever_selected_.Insert({layer, h, b})) ++step_fresh_;
    }
  }
}

void SmartgenSession::RecordPresence(int layer, const select::LayerSelection& sel) {
  // Per head, the selected blocks' share of the summary-bound attention mass that took part.
  double mass = 0, present_mass = 0;
  std::int64_t late = 0;
  for (int h = 0; h < config_.n_kv_heads; ++h) {
    const auto& blocks = sel.heads[h];
    float top = -std::numeric_limits<float>::infinity();
    if (!sel.scores.empty()) {
      for (float v : sel.scores[h]) top = std::max(top, v);
    }
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const double w = sel.scores.empty() ? 1.0 : std::exp(static_cast<double>(sel.scores[h][i] - top));
      const bool here = residency_->present(layer, h, blocks[i]);
      mass += w;
      present_mass += here ? w : 0.0;
      late += here ? 0 : 1;
    }
  }
  late_blocks_ += late;
  step_mass_ += mass;
  step_present_mass_ += present_mass;
  if (layer == config_.n_layers - 1) {
    if (step_ratio_.size() < 64 && step_selected_ > 0) {
      step_ratio_.push_back(static_cast<double>(step_missing_) / static_cast<double>(step_selected_));
      step_stall_per_step_.push_back(step_stall_ms_);  // this step's waits, its last layer's included
      step_present_share_.push_back(step_mass_ > 0 ? step_present_mass_ / step_mass_ : 1.0);
      // This step's selection churn: scored blocks its layers had not chosen the step before.
      const std::int64_t scored = selector_.scored_blocks() - churn_scored_;
      const std::int64_t changed = selector_.changed_blocks() - churn_changed_;
      step_churn_.push_back(scored > 0 ? static_cast<double>(changed) / static_cast<double>(scored) : 1.0);
      step_fresh_share_.push_back(step_scored_ > 0 ? static_cast<double>(step_fresh_) / static_cast<double>(step_scored_) : 0.0);
    }
    if (step_ratio_.size() > 1) {  // steps 2.. (step 1 selects everything anew)
      fresh_total_ += step_fresh_;
      fresh_scored_ += step_scored_;
    }
    step_fresh_ = step_scored_ = 0;
    churn_scored_ = selector_.scored_blocks();
    churn_changed_ = selector_.changed_blocks();
    step_selected_ = step_missing_ = 0;
    step_mass_ = step_present_mass_ = 0;
  }
}

nlohmann::json SmartgenSession::Stats(core::Nanos start, std::uint64_t blocks_received,
                                      std::uint64_t requested_received) const {
  // The proactive, first-step and on-demand copies in their wire form (int8 with int8_wire);
  // the rest of what arrived is the speculative stream's, in the KV dtype.
  const double block_bytes = static_cast<double>(kv_->geometry().block_bytes());
  const double wire_bytes = WireBlockBytes();
  const double proactive = static_cast<double>(proactive_blocks_) * wire_bytes;
  const double on_demand = static_cast<double>(requested_received) * wire_bytes;
  const double speculative_blocks = std::max<double>(
      0.0, static_cast<double>(blocks_received) - static_cast<double>(proactive_blocks_) -
               static_cast<double>(first_step_blocks_) - static_cast<double>(requested_received));
  nlohmann::json j;
  if (exact_at_ != 0) j["time_to_exact_ms"] = core::ToMillis(exact_at_ - start);
  j["recomputed_locally"] = recovered_;
  // Every announced first-step block is pushed (like the proactive ones).
  const double first_step = static_cast<double>(first_step_blocks_) * wire_bytes;
  j["bytes_by_path"] = {{"summaries", summary_bytes_},
                        {"proactive", proactive},
                        {"first_step", first_step},
                        {"on_demand", on_demand},
                        {"speculative", speculative_blocks * block_bytes}};
  j["int8_wire"] = options_.int8_wire;
  j["on_demand_ratio"] = selected_ > 0 ? static_cast<double>(missing_) / static_cast<double>(selected_) : 0.0;
  j["on_demand_ratio_per_step"] = step_ratio_;
  j["layer_stall_ms"] = layer_stall_ms_;
  j["stall_ms_per_step"] = step_stall_per_step_;
  j["present_mass_share_per_step"] = step_present_share_;
  j["late_blocks"] = late_blocks_;
  j["selection_churn"] = selector_.churn();
  j["selection_churn_per_step"] = step_churn_;
  // Score-selected blocks never selected before (the simulator's replayed selection).
  j["selection_fresh_per_step"] = step_fresh_share_;
  j["selection_fresh"] = fresh_scored_ > 0 ? static_cast<double>(fresh_total_) / static_cast<double>(fresh_scored_) : 0.0;
  j["fetch_capped_blocks"] = fetch_capped_;
  j["selective_layer_steps"] = steps_;
  // Where a selective layer-step's time goes (ms, summed over them; the waits are
  // layer_stall_ms): the simulator's calibration of a selective step reads these.
  j["selective_ms"] = {{"select", select_ms_total_},
                       {"local_attention", local_ms_total_},
                       {"merge_and_stats", merge_ms_total_},
                       {"wait_bound", wait_bound_ms_total_},
                       {"waited_layer_steps", waited_layer_steps_},
                       {"step_compute_ms", step_compute_ms_}};
  // The same per step (first 64, steps that ended before the request did), with the blocks each
  // step asked for.
  nlohmann::json per_step = {{"own", nlohmann::json::array()}, {"select", nlohmann::json::array()},
                             {"local_attention", nlohmann::json::array()},
                             {"merge_and_stats", nlohmann::json::array()}};
  nlohmann::json requested = nlohmann::json::array(), attended = nlohmann::json::array();
  for (const StepPhases& s : phases_per_step_) {
    per_step["own"].push_back(s.own);
    per_step["select"].push_back(s.select);
    per_step["local_attention"].push_back(s.local);
    per_step["merge_and_stats"].push_back(s.merge);
    requested.push_back(s.requested);
    attended.push_back(s.attended);
  }
  j["selective_ms_per_step"] = per_step;
  j["blocks_requested_per_step"] = requested;
  // The prompt blocks each step's local attention read (its rate: local_attention over these).
  j["attended_blocks_per_step"] = attended;
  if (first_attend_at_ != 0) j["first_attend_ms"] = core::ToMillis(first_attend_at_ - start);
  j["blocks_requested"] = blocks_fetched_;
  j["predicted_blocks"] = predicted_;  // checked against the real selection
  j["predicted_fetched_blocks"] = predicted_fetched_;
  j["prediction_hit_rate"] =
      predicted_ > 0 ? static_cast<double>(predicted_hits_) / static_cast<double>(predicted_) : 0.0;
  j["blocks_total"] = residency_->total_blocks();
  j["blocks_needed"] = residency_->needed_total();
  j["blocks_present"] = residency_->present_total();
  j["blocks_approximate"] = residency_->approximate_total();
  if (staged_) j["blocks_staged"] = staged_->staged_total();
  j["policy"] = selector_.policy_note();
  return j;
}

}  // namespace smartgen::node
