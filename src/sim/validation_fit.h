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

// A selective layer's own cost (Hardware::selective_layer_s) from the SmartGen records whose
// node timed its step phases with every layer selective (the node lists every step but the
// last; the first, which pays first touch and cold reads, is left out): a step's own time (its duration less
// its waits) less its selection, local attention and merge, less the dense step without its
// attention (the same repetition's colocated median step less `cost`'s attention at that
// context), less the CPU of the bytes landing meanwhile (`cost`'s transfer_cpu_s_per_byte at
// the link's rate), per layer; the median over the records (it may be negative: the dense
// step's measurement noise). Empty when no record has the figures.
std::optional<double> FitSelectiveLayerCost(
    const std::vector<MeasuredRecord>& records,
    const std::map<std::tuple<std::int64_t, double, int>, const MeasuredRecord*>& colocated_rep,
    const CostModel& cost);

// How much longer a request's first selective step scores than a later one
// (Hardware::first_select_extra), from the SmartGen records whose node timed its step phases
// with every layer selective: the median over the records of the first step's selection over
// the later steps' median, less 1. Empty when no record has the figures.
std::optional<double> FitFirstSelectExtra(const std::vector<MeasuredRecord>& records, const ModelShape& shape);

}  // namespace smartgen::sim::internal
