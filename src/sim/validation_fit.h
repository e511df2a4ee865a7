// The calibration of `smartgen simulate --validate` (sim/validation.h): machine rates fitted
// across a sweep's records, each from the records that measure it and none from the figure it
// is then checked against.
#pragma once

#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/cost_model.h"
#include "sim/model_shape.h"
#include "sim/validation.h"

namespace smartgen::sim::internal {

// Least-squares slope of the colocated records' decode step (median gap, else mean TBT) over
// their mean context, as a K/V read rate: KV bytes per key and layer / (slope / layers).
// 0 when fewer than two prompt lengths or the steps do not grow with the context.
double FitAttentionRate(const std::map<std::pair<std::int64_t, double>, const MeasuredRecord*>& colocated,
                        const ModelShape& shape);

// The first-touch rate (Hardware::first_touch_bytes_per_s) from the colocated records: how
// much longer their first decode step (TTST) took than their median step, pooled over every
// record as KV bytes / excess time. -1 when no record has both figures; 0 (no first-touch cost)
// when the first steps are not longer than the median ones.
double FitFirstTouchRate(const std::vector<const MeasuredRecord*>& colocated, const ModelShape& shape);

// The cold-read rate (Hardware::cold_read_bytes_per_s) from the records whose decode node sat
// idle until its KV was complete (full, layerwise): how much longer their first decode step took
// than their median one, less the first-touch cost the model charges it already: weight bytes
// / the median record's excess time. -1 when no record has the figure; 0 when the median first
// step is not longer.
double FitColdReadRate(const std::vector<MeasuredRecord>& records, const CostModel& cost);

// A selective layer's local attention (Hardware::local_attention_bytes_per_s and
// local_attention_layer_s) from the SmartGen records whose node listed its steps' attended
// blocks: the least-squares line of a record's mean local attention time per step over the K/V
// bytes it read (steps 2 on; the first pays first touch), across the records: the slope gives
// the rate, the intercept over the layers the fixed cost per layer (0 where it would be
// negative: the line then runs through the origin). Empty when fewer than two records have the
// figures or the time does not grow with the bytes.
struct LocalAttentionFit {
  double bytes_per_s = 0;
  double layer_s = 0;
};
std::optional<LocalAttentionFit> FitLocalAttention(const std::vector<MeasuredRecord>& records,
                                                   const ModelShape& shape, int block_tokens);

// A selective layer's own cost (Hardware::selective_layer_s) and the CPU a landing KV byte
// takes from the step (Hardware::transfer_cpu_s_per_byte), fitted together from the SmartGen
// records whose node timed its step phases with every layer selective (the node lists every
// step but the last; the first, which pays first touch and cold reads, is left out). A step's
// own time (its duration less its waits) less its selection, local attention and merge, less
// the dense step without its attention (the same repetition's colocated median step less
// `cost`'s attention at that context) leaves layers x selective_layer_s + the bytes landing
// during it x transfer_cpu_s_per_byte. The bytes landing: the record's on-demand and
// speculative bytes over the time from its first token until exact (else its last), at most
// the link's rate, times the step. The medians of each point (prompt, R) enter a least-squares
// fit of the two, neither below 0 (a fit that wants one negative sets it to 0 and refits the
// other alone). Without `fit_landing`, with a single point, or bytes that do not vary, only
// selective_layer_s is fitted and `cost`'s transfer_cpu_s_per_byte is kept (the caller fits
// both only where `cost` runs local attention at its measured rate: else the simulated step
// lacks part of what the residual leaves out). Empty when no record has the figures.
struct SelectiveCostFit {
  double layer_s = 0;
  double transfer_cpu_s_per_byte = 0;
};
std::optional<SelectiveCostFit> FitSelectiveCosts(
    const std::vector<MeasuredRecord>& records,
    const std::map<std::tuple<std::int64_t, double, int>, const MeasuredRecord*>& colocated_rep,
    const CostModel& cost, bool fit_landing = true);

// How much longer a request's first selective step scores than a later one
// (Hardware::first_select_extra), from the SmartGen records whose node timed its step phases
// with every layer selective: the median over the records of the first step's selection over
// the later steps' median, less 1. Empty when no record has the figures.
std::optional<double> FitFirstSelectExtra(const std::vector<MeasuredRecord>& records, const ModelShape& shape);

}  // namespace smartgen::sim::internal
