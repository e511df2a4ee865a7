// Validation: replays measured `smartgen bench ttst` records in the simulator and compares.
//
// A record is one JSON line: prompt_tokens, ratio (target R), link_mbps, mode, output_tokens
// (default 64), options (the run's --options object, default {}), and the measured ttft_ms
// (0 or absent: unknown), ttst_ms, mean_tbt_ms, e2e_ms, bytes_over_full, time_to_exact_ms
// (null when not exact); or a record as `smartgen bench ttst --data` writes it (n_prompt,
// target_R, link_gbps, prefill_ms, R, tbt_ms, bytes_transferred, kv_bytes, ...); '#' lines
// are comments. Each record is simulated as its run was: one
// prefill node and one decode node on one link of link_mbps (latency_s), the same prompt
// length, mode and output length, on the "cpu" preset with one of two calibrations:
//   kPreset   - the preset as it is (one calibration for the whole sweep);
//   kRecorded - the settings the benchmark itself records per run: the prefill time of that
//               request (prefill_ms, else its TTFT; bench ttst measures R from it) and the decode
//               step of the colocated record of the same (prompt, R) point (the floor every mode is
//               compared with); colocated's own TBT is then an input, not a prediction.
//   kOwn      - for a loaded machine, where the decode speed changes from run to run: the
//               request's own prefill and, as the dense decode step, the median of its own
//               token gaps (token_ms; for SmartGen, whose gaps hold its waits, colocated's of
//               the same point as under kRecorded); TTST and time to exact stay predictions,
//               the mean TBT of the dense modes becomes an input.
//   kOwnAll   - kOwn with SmartGen's own gaps too (when colocated's run saw another load):
//               its TBT is then partly an input, and its waits are counted twice.
// Under kOwn a SmartGen record that carries its node's step phases (selective_ms) is
// simulated with its selection time per layer-step and its waits' overrun past their bounds
// (machine figures, like the dense step; the waits themselves stay predictions).
// Across the records (not under kPreset) the calibration fits the machine's rates, each from
// the records that measure it (sim/validation_fit.h): the dense attention, first touch, the
// cold first step, SmartGen's local attention (from records that list the blocks each step's
// local attention read), a selective layer's own cost and, where the local attention has its
// own rate, the CPU of the KV bytes landing during a step.
// Under kRecorded and kOwn a SmartGen record that carries its node's proactive budget is
// simulated with that budget (the node sized it from its own estimate of the prefill, which
// the load can make wrong), as proactive_ratio = kv_bytes / budget.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "sim/hardware.h"
#include "sim/link.h"
#include "sim/model_shape.h"
#include "sim/selection_stats.h"
#include "sim/sim_options.h"

namespace smartgen::sim {

struct MeasuredRecord {
  std::int64_t prompt_tokens = 0;
  double ratio = 0;
  double link_mbps = 0;
  Mode mode = Mode::kSmartgen;
  std::string label;  // the record's mode label (MODE or MODE:nowindow, which sets
                      // options.window_aware false)
  int output_tokens = 64;
  int rep = 0;  // the repetition of its point (bench ttst --reps), 0 when not recorded
  nlohmann::json options = nlohmann::json::object();  // SmartGen options of the run
  double ttft_ms = 0, ttst_ms = 0, mean_tbt_ms = 0, e2e_ms = 0, bytes_over_full = 0;
  double prefill_ms = 0;       // the request's prefill on the prefill node (0 = not recorded)
  double measured_ratio = 0;   // R from that prefill (0 = not recorded)
  nlohmann::json selection;    // the run's recorded selection statistics (selection_churn,
                               // selection_churn_per_step, prediction_hit_rate), if any
  double median_gap_ms = 0;    // median gap of tokens 2..n (token_ms), 0 = not recorded
  // SmartGen: the proactive budget the prefill node chose from its own prefill estimate
  // (prefill_stats.smartgen.proactive_budget_bytes) and the full KV (kv_bytes); 0 = unknown.
  double proactive_budget_bytes = 0, kv_bytes = 0;
  double time_to_exact_ms = -1;  // -1 = not exact by the end
  double stall_ms =
      -1;  // SmartGen: the decode steps' fetch waits (layer_stall_ms summed), -1 = unknown
  // SmartGen, from the node's selective_ms (0 = not recorded): a selective layer-step's
  // selection time, and how far its waits ran past their bounds (stall - bounds, per wait).
  double select_ms_per_layer_step = 0, wait_overrun_ms = 0;
  // SmartGen, from the node's selective_ms_per_step (steps 2 on; 0 = not recorded): steps with
  // selective layers, layer-steps in all, and per step the own time (duration less waits) and
  // its selection + local attention + merge.
  int selective_steps = 0, selective_layer_steps = 0;
  double selective_own_ms = 0, selective_parts_ms = 0;
  // SmartGen, from the same steps (2 on) and attended_blocks_per_step: the prompt blocks (per
  // KV head, over the layers) their local attention read, and the time it took, summed; 0 =
  // not recorded.
  double local_attended_blocks = 0, local_attention_ms = 0;
  // SmartGen: the bytes that landed while the node decoded (bytes_by_path's on_demand and
  // speculative), -1 = not recorded.
  double decode_landed_bytes = -1;
  // SmartGen, from the same series: the first listed step's selection time over the median of
  // the later steps'; empty when not recorded.
  std::optional<double> first_select_ratio;
  // The decode engine's step durations (step_ms_per_step): how much longer its first step took
  // than the median of the rest, ms; unset (-1) when not recorded.
  double first_step_excess_ms = -1;
};

enum class Calibration { kPreset, kRecorded, kOwn, kOwnAll };

struct ValidationOptions {
  Calibration calibration = Calibration::kRecorded;
  Hardware cpu;                  // the CPU preset (HardwareByName("cpu") or CalibrateCpu)
  SelectionStats stats;          // random-weights: the sweep's model
  bool replay_selection = false; // records with selection statistics replay their own
  SmartgenSimOptions smartgen;   // the node defaults
  Seconds latency_s = 50e-6;     // loopback one way
  // The links' token-bucket burst (LinkConfig::burst_bytes): < 0 the engine's rule (an idle
  // link sends max(64 KiB, 5 ms at the rate) at once), 0 none.
  double burst_bytes = -1;
  // Bytes each frame adds on the links (LinkConfig::header_bytes): the engine's 64; 0 = payload
  // only.
  double header_bytes = kEngineFrameHeaderBytes;
  ModelShape shape;              // the model the records ran on (empty: SmolLM2-135M)
};

// kNotFound / kInvalidArgument naming the line.
Result<std::vector<MeasuredRecord>> ReadMeasuredRecords(const std::string& path);

// Per record {measured, simulated, relative errors} and a per-mode summary of the absolute
// relative errors of TTST, mean TBT, e2e and time to exact (mean, max, share within 15 %).
// Where a point (mode, prompt, R) holds several repetitions, "points" also compares the
// median measured with the median simulated per point, and "point_summary" summarises those
// errors per mode like "summary" (one request per point: the two agree). A record takes the
// colocated decode step of its own repetition where the sweep has one.
Result<nlohmann::json> Validate(const std::vector<MeasuredRecord>& records,
                                const ValidationOptions& options);

}  // namespace smartgen::sim
