#include "select/path_sizing.h"

#include <algorithm>
#include <cmath>

#include "select/proactive.h"

namespace smartgen::select {

std::int64_t ProactiveBudgetFor(const SmartgenOptions& o, std::int64_t full_kv_bytes,
                                double link_bytes_per_s, double prefill_seconds) {
  if (o.proactive_ratio > 0) return ProactiveBudgetForRatio(full_kv_bytes, o.proactive_ratio);
  if (!(link_bytes_per_s > 0)) return full_kv_bytes;
  return static_cast<std::int64_t>(
      o.proactive_fill * static_cast<double>(ProactiveBudgetBytes(link_bytes_per_s, prefill_seconds)));
}

std::int32_t FirstStepBlocksPerHead(const SmartgenOptions& o, std::int32_t n_blocks) {
  const OnDemandOptions& od = o.on_demand;
  const std::int32_t k =
      o.first_step_fraction > 0
          ? std::max<std::int32_t>(1, static_cast<std::int32_t>(std::ceil(o.first_step_fraction * n_blocks)))
      : od.budget_blocks > 0
          ? od.budget_blocks
          : std::max(od.min_budget_blocks, static_cast<std::int32_t>(std::ceil(od.budget_fraction * n_blocks)));
  return std::min(n_blocks, k);
}

std::int64_t FirstStepBlocks(const SmartgenOptions& o, double link_bytes_per_s, double block_bytes,
                             int n_layers, int n_kv_heads) {
  if (!(link_bytes_per_s > 0) || !(block_bytes > 0)) return std::numeric_limits<std::int64_t>::max();
  const double blocks = link_bytes_per_s * o.first_wait_ms / 1e3 / block_bytes;
  return std::max<std::int64_t>(std::int64_t{n_layers} * n_kv_heads, static_cast<std::int64_t>(blocks));
}

std::int64_t FetchCapBlocks(const SmartgenOptions& o, double link_bytes_per_s, double step_ms,
                            double block_bytes, int n_layers) {
  if (o.max_fetch_blocks > 0) return o.max_fetch_blocks;
  // What the link brings in about two steps, spread over the layers: more would only queue
  // behind itself (the rest comes later, or with the speculative stream).
  if (!(link_bytes_per_s > 0) || !(step_ms > 0) || !(block_bytes > 0) || n_layers <= 0) {
    return kDefaultFetchCapBlocks;
  }
  const double blocks = link_bytes_per_s * 2 * step_ms / 1e3 / block_bytes / static_cast<double>(n_layers);
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::ceil(blocks)), 1, kDefaultFetchCapBlocks * 16);
}

double LayerWaitBoundMs(const SmartgenOptions& o, double step_compute_ms, double local_attention_ms,
                        int n_layers) {
  if (o.wait_bound_ms >= 0) return o.wait_bound_ms;
  // The larger of the layer's share of the step's budget and its own attention time plus a
  // slack: a step then takes at most about (1 + wait_share) x its own time + step_slack_ms.
  const double step_share = (o.wait_share * step_compute_ms + o.step_slack_ms) /
                            static_cast<double>(std::max(1, n_layers));
  const double layer_own = o.wait_factor * local_attention_ms + o.wait_slack_ms;
  return std::max(step_share, layer_own);
}

PredictionUse UsePrediction(double checked_blocks, double hits) {
  if (checked_blocks < kPredictionWarmupBlocks) return PredictionUse::kCheck;
  return hits >= kPredictionMinHitRate * checked_blocks ? PredictionUse::kFetch : PredictionUse::kOff;
}

}  // namespace smartgen::select
