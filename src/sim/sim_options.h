// Options of a simulated cluster: transfer mode, SmartGen's options, cluster shape and link
// topology. SmartGen's options ARE the nodes' (select::SmartgenOptions, read by
// select::ParseSmartgenOptions from the same JSON keys as a request's `smartgen.options`), plus
// two of the simulator's own.
//
// Thread-safety: plain data.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "select/smartgen_options.h"
#include "sim/link.h"

namespace smartgen::sim {

enum class Mode { kColocated, kFull, kLayerwise, kSmartgen, kAuto };
Result<Mode> ParseMode(std::string_view name);
std::string_view ModeName(Mode m);

// A mode label as `bench ttst --modes` writes it: MODE or MODE:nowindow (the same mode with
// {"window_aware": false}, tools/ttst_request.h).
struct ModeLabel {
  Mode mode = Mode::kSmartgen;
  bool window_aware = true;
};
Result<ModeLabel> ParseModeLabel(std::string_view label);
std::string ModeLabelName(const ModeLabel& m);

struct SmartgenSimOptions : select::SmartgenOptions {
  // What-if (not what the node does today): size the proactive set for the share of the link
  // this request gets, the rate divided by the prefills pushing on the same link when it
  // starts. false = the link's rate (what a node that measured its link alone sees).
  bool proactive_rate_share = false;
  // The speculative sender caps a batch at this much link time (SpeculativeSender).
  Seconds speculative_batch_s = 0.1;
  // The request option every mode reads (node/common/window_transfer.h; select/needed_blocks.h):
  // a sliding-window layer needs only its window's blocks - full and layerwise send only
  // those, SmartGen pushes them whole and selects over the other layers. false: every block
  // of every layer, as in a model without sliding layers.
  bool window_aware = true;
};

// A wait bound this long means: until the fetch landed.
inline constexpr double kWaitUntilLandedMs = 1e7;

// select::ParseSmartgenOptions's keys and the request's "window_aware" (a boolean, for every
// mode), plus the simulator's "proactive_rate" ("configured" |
// "share") and, kept for older command lines, "wait": "landed" (wait_bound_ms 1e7: a layer
// waits until its fetch landed, the node before issue 15) | "bounded" (wait_bound_ms -1, the
// node's auto bound). Missing keys keep the node's defaults; kInvalidArgument names a bad one.
Result<SmartgenSimOptions> ParseSmartgenSimOptions(const nlohmann::json& j);
nlohmann::json ToJson(const SmartgenSimOptions& o);

// The node's behaviour before issue 15 (the 2026-11-30 sweep): no first step on the prefill
// node, attention over the selected blocks only, every layer waiting until its fetch landed,
// fetches not capped by the link rate.
nlohmann::json LegacyNodeOptions();

// Which links the KV crosses.
enum class Topology {
  kPair,     // one link per (prefill node, decode node) pair
  kUplink,   // one link per prefill node, shared by its transfers to every decode node
  kShared,   // one link for the whole cluster (a shared backbone / oversubscribed switch)
};
Result<Topology> ParseTopology(std::string_view name);
std::string_view TopologyName(Topology t);

struct ClusterOptions {
  int n_prefill = 1;
  int n_decode = 1;
  Topology topology = Topology::kPair;
  LinkConfig link;
  int max_batch = 64;            // decode sequences per step
  int block_tokens = 16;
  Mode mode = Mode::kSmartgen;
  SmartgenSimOptions smartgen;
};

}  // namespace smartgen::sim
