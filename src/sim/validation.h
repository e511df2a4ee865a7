// Validation: replays measured `smartgen bench ttst` records in the simulator and compares.
//
// A record is one JSON line: prompt_tokens, ratio (target R), link_mbps, mode, output_tokens
// (default 64), options (the run's --options object, default {}), and the measured ttft_ms
// (0 or absent: unknown), ttst_ms, mean_tbt_ms, e2e_ms, bytes_over_full, time_to_exact_ms
// (null when not exact); '#' lines are comments. Each record is simulated as its run was: one
// prefill node and one decode node on one link of link_mbps (latency_s), the same prompt
// length, mode and output length, on the "cpu" preset with one of two calibrations:
//   kPreset   - the preset as it is (one calibration for the whole sweep);
//   kRecorded - the settings the benchmark itself records per run: the prefill time of that
//               request (its TTFT, when recorded; bench ttst measures R from it) and the decode step of the
//               colocated record of the same (prompt, R) point (the floor every mode is
//               compared with); colocated's own TBT is then an input, not a prediction.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "sim/hardware.h"
#include "sim/selection_stats.h"
#include "sim/sim_options.h"

namespace smartgen::sim {

struct MeasuredRecord {
  std::int64_t prompt_tokens = 0;
  double ratio = 0;
  double link_mbps = 0;
  Mode mode = Mode::kSmartgen;
  int output_tokens = 64;
  nlohmann::json options = nlohmann::json::object();  // SmartGen options of the run
  double ttft_ms = 0, ttst_ms = 0, mean_tbt_ms = 0, e2e_ms = 0, bytes_over_full = 0;
  double time_to_exact_ms = -1;  // -1 = not exact by the end
};

enum class Calibration { kPreset, kRecorded };

struct ValidationOptions {
  Calibration calibration = Calibration::kRecorded;
  Hardware cpu;                  // the CPU preset (HardwareByName("cpu") or CalibrateCpu)
  SelectionStats stats;          // random-weights: the sweep's model
  SmartgenSimOptions smartgen;   // the node defaults
  Seconds latency_s = 50e-6;     // loopback one way
};

// kNotFound / kInvalidArgument naming the line.
Result<std::vector<MeasuredRecord>> ReadMeasuredRecords(const std::string& path);

// Per record {measured, simulated, relative errors} and a per-mode summary of the absolute
// relative errors of TTST, mean TBT, e2e and time to exact (mean, max, share within 15 %).
Result<nlohmann::json> Validate(const std::vector<MeasuredRecord>& records,
                                const ValidationOptions& options);

}  // namespace smartgen::sim
