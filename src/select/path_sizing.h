// Path sizing: how much each SmartGen path moves, and how long a decode layer waits for it,
// from the link rate the node measured and the step times it observed. The prefill node, the
// decode node's SmartgenSession and the simulator (src/sim) all call these, so a rule changes
// in one place.
//
//   proactive set   ProactiveBudgetFor: proactive_ratio > 0 ? full KV / R
//                                       : proactive_fill x rate x the prefill estimate
//                   (the whole KV when no rate is known);
//   first step      FirstStepBlocks: what the link carries within first_wait_ms, at least one
//                   block per (layer, KV head); unbounded before a rate is known;
//   on demand       FetchCapBlocks: per layer-step, what the link brings in about two steps,
//                   spread over the layers (max_fetch_blocks > 0 fixes it);
//   wait bound      LayerWaitBoundMs: wait_bound_ms >= 0 fixes it; auto is the larger of
//                   (wait_share x the step's own time + step_slack_ms) / n_layers and
//                   wait_factor x the layer's local attention time + wait_slack_ms.
//
// Units: bytes, bytes per second, seconds or milliseconds as named. Thread-safety: pure.
#pragma once

#include <cstdint>
#include <limits>

#include "select/smartgen_options.h"

namespace smartgen::select {

// The proactive set's byte budget for a prompt whose whole KV is `full_kv_bytes`.
// link_bytes_per_s <= 0 means unknown: everything (the set is then capped by the KV itself).
std::int64_t ProactiveBudgetFor(const SmartgenOptions& o, std::int64_t full_kv_bytes,
                                double link_bytes_per_s, double prefill_seconds);

// Blocks per (layer, KV head) the first step ranks: first_step_fraction of the prompt's
// blocks when > 0, else the on-demand budget; at most n_blocks.
std::int32_t FirstStepBlocksPerHead(const SmartgenOptions& o, std::int32_t n_blocks);

// Blocks the prefill node's first step pushes (all layers and heads together).
// link_bytes_per_s <= 0: no cap (int64 max).
std::int64_t FirstStepBlocks(const SmartgenOptions& o, double link_bytes_per_s,
                             double block_bytes, int n_layers, int n_kv_heads);

// Blocks one layer-step fetches at most. step_ms: the decode step's duration (EWMA);
// link_bytes_per_s or step_ms <= 0 (not measured yet): kDefaultFetchCapBlocks.
inline constexpr std::int64_t kDefaultFetchCapBlocks = 64;
std::int64_t FetchCapBlocks(const SmartgenOptions& o, double link_bytes_per_s, double step_ms,
                            double block_bytes, int n_layers);

// How long one layer waits for its on-demand fetch, in ms. step_compute_ms: the step's own
// time without its link waits; local_attention_ms: the layer's attention over present blocks.
double LayerWaitBoundMs(const SmartgenOptions& o, double step_compute_ms, double local_attention_ms,
                        int n_layers);

// What a layer does with its guess at layer l+1's selection (its own choice, made while it runs):
//   - kCheck: until kPredictionWarmupBlocks predicted blocks have been checked against the real
//     selection, the guess is only scored, never fetched: an unchecked guess that misses puts
//     link time ahead of the fetches the step really needs (token 2 waits behind it);
//   - kFetch: after that, while at least kPredictionMinHitRate of the checked blocks were
//     selected, the guess's absent blocks are requested at once (and go on being scored);
//   - kOff: otherwise; the guess is no longer made.
// Counts may be expected values (the simulator).
inline constexpr double kPredictionWarmupBlocks = 64;
inline constexpr double kPredictionMinHitRate = 0.5;
enum class PredictionUse { kCheck, kFetch, kOff };
PredictionUse UsePrediction(double checked_blocks, double hits);

}  // namespace smartgen::select
