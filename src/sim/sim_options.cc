#include "sim/sim_options.h"

namespace smartgen::sim {
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

Result<ModeLabel> ParseModeLabel(std::string_view label) {
  ModeLabel m;
  std::string_view mode = label;
  if (const std::size_t at = label.find(':'); at != std::string_view::npos) {
    if (label.substr(at + 1) != "nowindow") {
      return InvalidArgument("mode label '{}': unknown variant (MODE or MODE:nowindow)", label);
    }
    m.window_aware = false;
    mode = label.substr(0, at);
  }
  SG_ASSIGN_OR_RETURN(m.mode, ParseMode(mode));
  return m;
}

std::string ModeLabelName(const ModeLabel& m) {
  return std::string(ModeName(m.mode)) + (m.window_aware ? "" : ":nowindow");
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
  // The node's keys, by the node's parser (it ignores the simulator's own below).
  SG_ASSIGN_OR_RETURN(static_cast<select::SmartgenOptions&>(o), select::ParseSmartgenOptions(j));
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
  if (j.contains("window_aware") && !j["window_aware"].is_null()) {
    if (!j["window_aware"].is_boolean())
      return InvalidArgument("option 'window_aware' must be a boolean");
    o.window_aware = j["window_aware"].get<bool>();
  }
  if (j.contains("wait")) {
    const nlohmann::json& w = j["wait"];
    if (w == "landed") {
      o.wait_bound_ms = kWaitUntilLandedMs;
    } else if (w == "bounded") {
      o.wait_bound_ms = -1;
    } else {
      return InvalidArgument("option 'wait' must be \"landed\" or \"bounded\"");
    }
  }
  return o;
}

nlohmann::json ToJson(const SmartgenSimOptions& o) {
  nlohmann::json j = select::ToJson(static_cast<const select::SmartgenOptions&>(o));
  j["proactive_rate"] = o.proactive_rate_share ? "share" : "configured";
  j["window_aware"] = o.window_aware;
  return j;
}

nlohmann::json LegacyNodeOptions() {
  return {{"first_step", false},
          {"attend_present", false},
          {"wait_bound_ms", kWaitUntilLandedMs},
          {"max_fetch_blocks", 1 << 20}};
}

}  // namespace smartgen::sim
