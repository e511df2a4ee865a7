#include "sim/sim_options.h"

namespace smartgen::sim {
namespace {

template <typename T>
Status Take(const nlohmann::json& j, const char* key, T* out, double lo, double hi) {
  if (!j.contains(key)) return Status::Ok();
  const nlohmann::json& v = j[key];
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return InvalidArgument("option '{}' must be a boolean", key);
    *out = v.get<bool>();
  } else {
    if (!v.is_number()) return InvalidArgument("option '{}' must be a number", key);
    const double d = v.get<double>();
    if (d < lo || d > hi) return InvalidArgument("option '{}' = {} outside [{}, {}]", key, d, lo, hi);
    *out = static_cast<T>(d);
  }
  return Status::Ok();
}

}  // namespace

Result<Mode> ParseMode(std::string_view n) {
  if (n == "colocated") return Mode::kColocated;
  if (n == "full") return Mode::kFull;
  if (n == "layerwise") return Mode::kLayerwise;
  if (n == "smartgen") return Mode::kSmartgen;
  if (n == "auto") return Mode::kAuto;
  return InvalidArgument("unknown mode '{}' (colocated|full|layerwise|smartgen|auto)", n);
}

std::string_view ModeName(Mode m) {
  switch (m) {
    case Mode::kColocated: return "colocated";
    case Mode::kFull: return "full";
    case Mode::kLayerwise: return "layerwise";
    case Mode::kSmartgen: return "smartgen";
    case Mode::kAuto: return "auto";
  }
  return "?";
}

Result<Topology> ParseTopology(std::string_view n) {
  if (n == "pair") return Topology::kPair;
  if (n == "uplink") return Topology::kUplink;
  if (n == "shared") return Topology::kShared;
  return InvalidArgument("unknown topology '{}' (pair|uplink|shared)", n);
}

std::string_view TopologyName(Topology t) {
  switch (t) {
    case Topology::kPair: return "pair";
    case Topology::kUplink: return "uplink";
    case Topology::kShared: return "shared";
  }
  return "?";
}

Result<SmartgenSimOptions> ParseSmartgenSimOptions(const nlohmann::json& j) {
  SmartgenSimOptions o;
  if (j.is_null()) return o;
  if (!j.is_object()) return InvalidArgument("smartgen options must be a JSON object");
  SG_RETURN_IF_ERROR(Take(j, "budget_fraction", &o.on_demand.budget_fraction, 0.0, 1.0));
  SG_RETURN_IF_ERROR(Take(j, "budget_blocks", &o.on_demand.budget_blocks, 0, 1 << 30));
  SG_RETURN_IF_ERROR(Take(j, "sink_blocks", &o.on_demand.sink_blocks, 0, 1 << 20));
  SG_RETURN_IF_ERROR(Take(j, "local_blocks", &o.on_demand.local_blocks, 0, 1 << 20));
  o.proactive.sink_blocks = o.on_demand.sink_blocks;
  o.proactive.last_blocks = o.on_demand.local_blocks;
  SG_RETURN_IF_ERROR(Take(j, "on_demand", &o.fetch_on_demand, 0, 1));
  SG_RETURN_IF_ERROR(Take(j, "speculative", &o.speculative, 0, 1));
  SG_RETURN_IF_ERROR(Take(j, "predict_next", &o.predict_next, 0, 1));
  SG_RETURN_IF_ERROR(Take(j, "proactive_ratio", &o.proactive_ratio, 0.0, 1e6));
  SG_RETURN_IF_ERROR(Take(j, "proactive_fill", &o.proactive_fill, 0.0, 1.0));
  SG_RETURN_IF_ERROR(Take(j, "speculative_fraction", &o.pacing.fraction_per_step, 0.0, 1.0));
  SG_RETURN_IF_ERROR(Take(j, "query_window", &o.query_window, 0, 1 << 20));
  SG_RETURN_IF_ERROR(Take(j, "wait_factor", &o.wait_factor, 0.0, 1e6));
  double slack_ms = o.wait_slack_s * 1e3;
  SG_RETURN_IF_ERROR(Take(j, "wait_slack_ms", &slack_ms, 0.0, 1e9));
  o.wait_slack_s = slack_ms / 1e3;
  if (j.contains("proactive_rate")) {
    const nlohmann::json& w = j["proactive_rate"];
    if (w == "configured") {
      o.proactive_rate_share = false;
    } else if (w == "share") {
      o.proactive_rate_share = true;
    } else {
      return InvalidArgument("option 'proactive_rate' must be \"configured\" or \"share\"");
    }
  }
  if (j.contains("wait")) {
    const nlohmann::json& w = j["wait"];
    if (w == "landed") {
      o.wait = WaitPolicy::kUntilLanded;
    } else if (w == "bounded") {
      o.wait = WaitPolicy::kBounded;
    } else {
      return InvalidArgument("option 'wait' must be \"landed\" or \"bounded\"");
    }
  }
  return o;
}

nlohmann::json ToJson(const SmartgenSimOptions& o) {
  return {{"budget_fraction", o.on_demand.budget_fraction},
          {"budget_blocks", o.on_demand.budget_blocks},
          {"sink_blocks", o.on_demand.sink_blocks},
          {"local_blocks", o.on_demand.local_blocks},
          {"on_demand", o.fetch_on_demand},
          {"speculative", o.speculative},
          {"predict_next", o.predict_next},
          {"proactive_ratio", o.proactive_ratio},
          {"proactive_fill", o.proactive_fill},
          {"speculative_fraction", o.pacing.fraction_per_step},
          {"query_window", o.query_window},
          {"proactive_rate", o.proactive_rate_share ? "share" : "configured"},
          {"wait", o.wait == WaitPolicy::kBounded ? "bounded" : "landed"},
          {"wait_factor", o.wait_factor},
          {"wait_slack_ms", o.wait_slack_s * 1e3}};
}

}  // namespace smartgen::sim
