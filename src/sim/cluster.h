// Cluster: a simulated PD cluster - prefill nodes, decode nodes, the links between them and a
// router - run over a workload.
//
// The router sends each request to the prefill node with the least queued prefill work and
// the decode node with the fewest requests, and resolves `auto` per request: layerwise when
// the link moves the full KV within the node's prefill estimate, else smartgen (the rule of
// node/router's ResolveAuto, select/auto_mode.h). A request's decode starts when its mode's
// condition holds: full/layerwise every byte, smartgen the summaries and proactive set - or,
// with the first step, first_wait_ms after PrefillDone - plus PrefillDone.
//
// Thread-safety: RunCluster is a pure function of its arguments (one simulation per call).
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "sim/hardware.h"
#include "sim/model_shape.h"
#include "sim/request.h"
#include "sim/selection_stats.h"
#include "sim/sim_options.h"
#include "sim/workload.h"

namespace smartgen::sim {

struct ClusterSpec {
  ModelShape model;
  Hardware prefill_hw;
  Hardware decode_hw;
  ClusterOptions options;
  SelectionStats stats;
};

struct LinkStats {
  std::string name;
  std::array<double, static_cast<int>(Path::kCount)> bytes{};
  Seconds busy_s = 0;
  double gbps = 0;
};

struct SimResult {
  std::vector<std::unique_ptr<SimRequest>> requests;  // in arrival order
  std::vector<LinkStats> links;
  Seconds horizon = 0;  // last request done
  std::uint64_t events = 0;
};

// Called after each finished request (done, total, simulated time).
using Progress = std::function<void(int, int, Seconds)>;

// kInvalidArgument for an empty cluster or workload, or a link rate <= 0 with a mode that
// crosses the link.
Result<SimResult> RunCluster(const ClusterSpec& spec, const std::vector<RequestSpec>& workload,
                             const Progress& progress = nullptr);

}  // namespace smartgen::sim
