#include "select/smartgen_options.h"

#include <algorithm>

namespace smartgen::select {

using nlohmann::json;

namespace {

template <typename T>
Status Take(const json& j, const char* key, T* out, double lo, double hi) {
  if (!j.contains(key) || j[key].is_null()) return Status::Ok();
  const json& v = j[key];
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return InvalidArgument("smartgen option '{}' must be a boolean", key);
    *out = v.get<bool>();
  } else {
    if (!v.is_number()) return InvalidArgument("smartgen option '{}' must be a number", key);
    const double d = v.get<double>();
    if (d < lo || d > hi) return InvalidArgument("smartgen option '{}' = {} is outside [{}, {}]", key, d, lo, hi);
    *out = static_cast<T>(d);
  }
  return Status::Ok();
}

}  // namespace

Result<SmartgenOptions> ParseSmartgenOptions(const json& j,
                                             std::span<const std::string_view> also_read) {
  SmartgenOptions o;
  if (j.is_null()) return o;
  if (!j.is_object()) return InvalidArgument("smartgen options must be an object");
  const json known = ToJson(o);
  for (const auto& [key, value] : j.items()) {
    if (known.contains(key) ||
        std::find(also_read.begin(), also_read.end(), key) != also_read.end())
      continue;
    return InvalidArgument("unknown smartgen option '{}'", key);
  }
  SG_RETURN_IF_ERROR(Take(j, "budget_fraction", &o.on_demand.budget_fraction, 0.0, 1.0));
  SG_RETURN_IF_ERROR(Take(j, "budget_blocks", &o.on_demand.budget_blocks, 0, 1 << 20));
  SG_RETURN_IF_ERROR(Take(j, "min_budget_blocks", &o.on_demand.min_budget_blocks, 0, 1 << 20));
  SG_RETURN_IF_ERROR(Take(j, "sink_blocks", &o.on_demand.sink_blocks, 0, 1 << 10));
  SG_RETURN_IF_ERROR(Take(j, "local_blocks", &o.on_demand.local_blocks, 0, 1 << 10));
  SG_RETURN_IF_ERROR(Take(j, "hysteresis", &o.on_demand.hysteresis, 0.0, 100.0));
  SG_RETURN_IF_ERROR(Take(j, "on_demand", &o.fetch_on_demand, 0, 1));
  SG_RETURN_IF_ERROR(Take(j, "speculative", &o.speculative, 0, 1));
  SG_RETURN_IF_ERROR(Take(j, "predict_next", &o.predict_next, 0, 1));
  SG_RETURN_IF_ERROR(Take(j, "attend_present", &o.attend_present, 0, 1));
  SG_RETURN_IF_ERROR(Take(j, "first_step", &o.first_step, 0, 1));
  SG_RETURN_IF_ERROR(Take(j, "int8_wire", &o.int8_wire, 0, 1));
  SG_RETURN_IF_ERROR(Take(j, "first_wait_ms", &o.first_wait_ms, 0.0, 1e7));
  SG_RETURN_IF_ERROR(Take(j, "first_step_fraction", &o.first_step_fraction, 0.0, 1.0));
  SG_RETURN_IF_ERROR(Take(j, "proactive_ratio", &o.proactive_ratio, 0, 1e6));
  SG_RETURN_IF_ERROR(Take(j, "proactive_fill", &o.proactive_fill, 0.0, 1.0));
  SG_RETURN_IF_ERROR(Take(j, "speculative_fraction", &o.pacing.fraction_per_step, 0.0, 1.0));
  SG_RETURN_IF_ERROR(Take(j, "query_window", &o.query_window, 1, 1024));
  SG_RETURN_IF_ERROR(Take(j, "wait_bound_ms", &o.wait_bound_ms, -1.0, 1e7));
  SG_RETURN_IF_ERROR(Take(j, "wait_share", &o.wait_share, 0.0, 100.0));
  SG_RETURN_IF_ERROR(Take(j, "step_slack_ms", &o.step_slack_ms, 0.0, 1e4));
  SG_RETURN_IF_ERROR(Take(j, "wait_factor", &o.wait_factor, 0.0, 1e3));
  SG_RETURN_IF_ERROR(Take(j, "wait_slack_ms", &o.wait_slack_ms, 0.0, 1e4));
  SG_RETURN_IF_ERROR(Take(j, "max_fetch_blocks", &o.max_fetch_blocks, 0, 1 << 20));
  o.proactive.sink_blocks = o.on_demand.sink_blocks;
  o.proactive.last_blocks = o.on_demand.local_blocks;
  return o;
}

json ToJson(const SmartgenOptions& o) {
  return {{"budget_fraction", o.on_demand.budget_fraction},
          {"budget_blocks", o.on_demand.budget_blocks},
          {"min_budget_blocks", o.on_demand.min_budget_blocks},
          {"sink_blocks", o.on_demand.sink_blocks},
          {"local_blocks", o.on_demand.local_blocks},
          {"hysteresis", o.on_demand.hysteresis},
          {"on_demand", o.fetch_on_demand},
          {"speculative", o.speculative},
          {"predict_next", o.predict_next},
          {"attend_present", o.attend_present},
          {"int8_wire", o.int8_wire},
          {"first_step", o.first_step},
          {"first_wait_ms", o.first_wait_ms},
          {"first_step_fraction", o.first_step_fraction},
          {"proactive_ratio", o.proactive_ratio},
          {"proactive_fill", o.proactive_fill},
          {"speculative_fraction", o.pacing.fraction_per_step},
          {"query_window", o.query_window},
          {"wait_bound_ms", o.wait_bound_ms},
          {"wait_share", o.wait_share},
          {"step_slack_ms", o.step_slack_ms},
          {"wait_factor", o.wait_factor},
          {"wait_slack_ms", o.wait_slack_ms},
          {"max_fetch_blocks", o.max_fetch_blocks}};
}

}  // namespace smartgen::select
