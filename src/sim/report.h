// Report: what a simulation run measured, as JSON: TTFT, TTST, TBT (every gap of tokens 2..n,
// pooled) and per-request mean TBT, end-to-end and time to exact distributions (mean, p50,
// p90, p99, max, in ms), bytes per path (summed over requests; cancelled_bytes apart: SmartGen
// pushes and stream bytes that never crossed because the request ended first), bytes per link and path, link utilisation (busy time / run length), and goodput
// under an SLO: completed requests per second whose TTFT, TTST and mean TBT all meet it.
// Definitions follow DESIGN.md section 8 (time to exact from arrival).
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include "sim/cluster.h"

namespace smartgen::sim {

struct Slo {
  double ttft_ms = 0;      // 0 = no target
  double ttst_ms = 0;
  double mean_tbt_ms = 0;
};

// The distribution of `values_ms`: {n, mean, p50, p90, p99, max}; {n: 0} when empty.
nlohmann::json Distribution(std::vector<double> values_ms);

// Per-request figures (ms): ttft, ttst, mean_tbt, e2e, time_to_exact (null if never exact),
// bytes_over_full, bytes by path, present_share (SmartGen: selected blocks present when
// attended).
nlohmann::json RequestRecord(const SimRequest& r);

// The run summary.
nlohmann::json Summarize(const SimResult& result, const Slo& slo);

// Whether r met every target of `slo` (an unfinished request never does).
bool MeetsSlo(const SimRequest& r, const Slo& slo);

}  // namespace smartgen::sim
