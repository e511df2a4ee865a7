// Options of a simulated cluster: transfer mode, SmartGen's options, decode wait policy,
// cluster shape and link topology. SmartGen's options are the select layer's own structs
// (select::OnDemandOptions, ProactiveOptions, SpeculativePacing) with the node's defaults, and
// ParseSmartgenSimOptions reads the same JSON keys as a request's `smartgen.options`
// (node/common/smartgen_options.h), plus the simulator's wait policy.
//
// Thread-safety: plain data.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "select/on_demand.h"
#include "select/proactive.h"
#include "select/speculative.h"
#include "sim/link.h"

namespace smartgen::sim {

enum class Mode { kColocated, kFull, kLayerwise, kSmartgen, kAuto };
Result<Mode> ParseMode(std::string_view name);
std::string_view ModeName(Mode m);

// How long a decode layer waits for its on-demand fetch (DESIGN.md section 4.2).
enum class WaitPolicy {
  kUntilLanded,  // until every fetched block landed (what the measured sweep ran)
  kBounded,      // until its own compute time x wait_factor + wait_slack_s; late blocks are
                 // left out of this step and used from the step they land in (issue 15)
};

struct SmartgenSimOptions {
  select::OnDemandOptions on_demand;
  select::ProactiveOptions proactive;
  select::SpeculativePacing pacing;
  bool fetch_on_demand = true;
  bool speculative = true;
  bool predict_next = true;
  double proactive_ratio = 0;   // > 0: size the proactive set for this R instead of the link
  double proactive_fill = 0.85; // share of the link's capacity during prefill
  // What-if (not what the node does today): size the proactive set for the share of the link
  // this request gets, the rate divided by the prefills pushing on the same link when it
  // starts, as a node that measures its link rate would (issue 15). false = configured rate.
  bool proactive_rate_share = false;
  int query_window = 32;        // last prompt queries scoring blocks (prefill-side cost)
  WaitPolicy wait = WaitPolicy::kUntilLanded;
  double wait_factor = 1.0;     // bounded: x the layer's own compute time
  Seconds wait_slack_s = 50e-6;
  // The speculative sender caps a batch at this much link time (SpeculativeSender).
  Seconds speculative_batch_s = 0.1;
};

// Keys: budget_fraction, budget_blocks, sink_blocks, local_blocks, on_demand, speculative,
// predict_next, proactive_ratio, proactive_fill, speculative_fraction, query_window, and the
// simulator's wait ("landed" | "bounded"), wait_factor, wait_slack_ms, proactive_rate
// ("configured" | "share"). Missing keys keep defaults;
// kInvalidArgument names a bad one.
Result<SmartgenSimOptions> ParseSmartgenSimOptions(const nlohmann::json& j);
nlohmann::json ToJson(const SmartgenSimOptions& o);

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
