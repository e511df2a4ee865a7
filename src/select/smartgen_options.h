// Per-request options of the SmartGen mode (the `smartgen.options` object of a request, passed
// to both nodes; the simulator, src/sim, reads the same struct from the same keys), with the
// defaults the paper's full system uses. The flags switch off paths for
// the paper's ablation: proactive only; + parallel on-demand; + speculative.
//
//   {"budget_fraction": 0.125, "budget_blocks": 0, "sink_blocks": 1, "local_blocks": 2,
//   "hysteresis": 0.3,
//    "on_demand": true, "speculative": true, "predict_next": true, "attend_present": true,
//    "first_step": true, "first_wait_ms": 8, "first_step_fraction": 0,
//    "proactive_ratio": 0, "proactive_fill": 0.85, "speculative_fraction": 0.1, "query_window": 32,
//    "wait_bound_ms": -1, "wait_share": 0.15, "step_slack_ms": 3, "wait_factor": 1.0,
//    "wait_slack_ms": 0.05, "max_fetch_blocks": 0}
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string_view>

#include "core/result.h"
#include "select/on_demand.h"
#include "select/proactive.h"
#include "select/speculative.h"

namespace smartgen::select {

struct SmartgenOptions {
  OnDemandOptions on_demand;           // selection budget per decode step
  ProactiveOptions proactive;          // sinks/last blocks pushed during prefill
  SpeculativePacing pacing;            // background stream pacing
  bool fetch_on_demand = true;         // fetch missing selected blocks each step
  bool speculative = true;             // stream the rest until exact
  bool predict_next = true;            // request layer l+1's predicted blocks during layer l
  // A step attends over every prompt block present on the node, not only the selected ones:
  // the selection decides what is fetched, and whatever the proactive and speculative paths
  // already brought is used too (at most the dense attention colocated decoding does anyway).
  // false: the paper's on-demand path, attending over the selected blocks only.
  bool attend_present = true;
  // Better first steps (DESIGN.md 4.1): the prefill node runs the first decode step itself (it
  // holds the whole KV; one decode step of compute, before token 1 is sent), ranks every
  // layer's blocks by the exact attention mass of that step's query, tells the decode node
  // (kFirstStepManifest) and pushes the top on-demand budget of them first. The decode node's
  // first step uses that exact selection and waits for it up to first_wait_ms: token 2 may
  // come that much later than colocated's, for the step that decides it on what it needs.
  // 8 ms (was 15): on a quiet machine it kept kv-retrieval-tiny's accuracy at 1K and 2K and
  // stories260K's agreement at 99.2 % while SmolLM2-135M's TTST at 4096 tokens, R = 4, fell from
  // 2.16x to 1.50x colocated's (docs/RESULTS.md, issue 15).
  bool first_step = true;
  double first_wait_ms = 8;
  // Blocks per KV head the first step takes, as a share of the prompt's (0: the on-demand
  // budget).
  double first_step_fraction = 0;
  // Size the proactive set for this transfer ratio instead of the link estimate (0 = estimate).
  double proactive_ratio = 0;
  // Share of the link's estimated capacity during prefill that the proactive set fills: what
  // is still queued when prefill ends delays token 2 (the estimate comes from past prefills
  // and the configured rate, and the first push can only start when layer 0 is done).
  double proactive_fill = 0.85;
  int query_window = 32;               // last prompt queries scoring blocks (SnapKV-style)
  // The step never waits on the link beyond a bound (DESIGN.md 4.2): a layer waits for its
  // on-demand blocks at most wait_bound_ms (< 0: auto, below); blocks that have not landed are left out of this
  // step (the LSE merge covers what is present) and used from the step they land in. A wait
  // that reaches the node's step timeout means a hung link: the missing KV is computed here.
  // Auto, per layer: the larger of (wait_share x the step's own time + step_slack_ms) / n_layers
  // and wait_factor x the layer's local attention time + wait_slack_ms; so a step takes at most
  // about (1 + wait_share) x its own time + step_slack_ms.
  double wait_bound_ms = -1;
  double wait_share = 0.15;
  double step_slack_ms = 3;
  double wait_factor = 1.0;
  double wait_slack_ms = 0.05;
  // Blocks one layer-step fetches at most, highest score first (0: sized from the link rate
  // the endpoint measures, so what is asked for is what can arrive within about a step).
  int max_fetch_blocks = 0;
  // Fewer bytes for the approximate paths (DESIGN.md 4.2): the proactive, first-step and
  // on-demand blocks travel as int8 with per-row scales (transfer/int8_wire.h, about half an
  // f16 block). The speculative path still sends every block in the KV dtype, those first, and
  // the exact copy replaces the int8 one between steps, so the node still becomes exact; time
  // to exact and bytes on the wire count both copies.
  bool int8_wire = false;
};

// Keys of the same options object that other parsers read (node/common/window_transfer.h).
inline constexpr std::string_view kNodeOptionKeys[] = {"window_aware"};

// Missing fields keep their defaults; wrong types or ranges are kInvalidArgument naming the
// field; null means all defaults. A key that is neither a SmartgenOptions field nor in
// `also_read` (the keys other parsers of the same object read) is kInvalidArgument naming it:
// a misspelt option must not run the default silently.
Result<SmartgenOptions> ParseSmartgenOptions(
    const nlohmann::json& j, std::span<const std::string_view> also_read = kNodeOptionKeys);
nlohmann::json ToJson(const SmartgenOptions& o);

}  // namespace smartgen::select
