#include "tools/ttst_request.h"

#include <algorithm>

#include "select/smartgen_options.h"

namespace smartgen::tools {

using nlohmann::json;

Result<std::pair<std::string, json>> ModeOfLabel(const std::string& label, const json& options) {
  json o = options.is_object() ? options : json::object();
  std::string mode = label;
  for (std::size_t at = mode.rfind(':'); at != std::string::npos; at = mode.rfind(':')) {
    const std::string variant = mode.substr(at + 1);
    if (variant == "nowindow") {
      o["window_aware"] = false;
    } else if (variant == "int8") {
      o["int8_wire"] = true;
    } else {
      return InvalidArgument("mode label {}: unknown variant '{}' (nowindow, int8)", label, variant);
    }
    mode.resize(at);
  }
  return std::pair{mode, o.empty() && options.is_null() ? json() : o};
}

Result<json> EffectiveOptions(const std::string& label, const json& options) {
  SG_ASSIGN_OR_RETURN(auto mode_options, ModeOfLabel(label, options));
  SG_ASSIGN_OR_RETURN(select::SmartgenOptions parsed,
                      select::ParseSmartgenOptions(mode_options.second));
  json o = select::ToJson(parsed);
  const json& given = mode_options.second;
  o["window_aware"] =
      !(given.is_object() && given.contains("window_aware") && given["window_aware"] == false);
  return o;
}

Result<TtstMeasured> SendBenchRequest(const LocalCluster& cluster, const BenchRequest& rq) {
  SG_ASSIGN_OR_RETURN(auto mode_options, ModeOfLabel(rq.mode, rq.options));
  json ext = {{"mode", mode_options.first}, {"return_token_ids", true}, {"ignore_eos", true}};
  if (!mode_options.second.is_null()) ext["options"] = mode_options.second;
  if (!rq.forced.empty()) ext["forced_tokens"] = rq.forced;
  json body = {{"prompt", rq.prompt}, {"max_tokens", rq.max_tokens}, {"temperature", 0},
               {"smartgen", ext}};
  SG_ASSIGN_OR_RETURN(json r, cluster.Complete(body));
  TtstMeasured m;
  m.response_stats = r.value("smartgen", json::object());
  const json& s = m.response_stats;
  if (s.contains("token_ids") && s["token_ids"].is_array()) {
    m.tokens = s["token_ids"].get<std::vector<std::int32_t>>();
  }
  if (!rq.forced.empty()) {
    if (!s.contains("argmax_tokens") || !s["argmax_tokens"].is_array()) {
      return Internal("a teacher-forced {} request came back without argmax_tokens: {}", rq.mode,
                      s.dump());
    }
    m.argmax = s["argmax_tokens"].get<std::vector<std::int32_t>>();
  }
  return m;
}

double StatNumber(const json& j, const char* a, const char* b) {
  const json* v = &j;
  for (const char* k : {a, b}) {
    if (k == nullptr) break;
    if (!v->is_object() || !v->contains(k)) return 0.0;
    v = &(*v)[k];
  }
  return v->is_number() ? v->get<double>() : 0.0;
}

json RequestFields(const json& s) {
  json rec = {
      // Token times as the router hands tokens to the HTTP front (the server's own figures
      // are taken when its writer thread gets to them, later under load).
      {"ttft_ms", s.contains("router_ttft_ms") ? StatNumber(s, "router_ttft_ms")
                                               : StatNumber(s, "server", "ttft_ms")},
      {"ttst_ms", s.contains("router_ttst_ms") ? StatNumber(s, "router_ttst_ms")
                                               : StatNumber(s, "server", "ttst_ms")},
      {"tbt_ms", StatNumber(s, "server", "tbt_ms")},
      {"e2e_ms", StatNumber(s, "server", "e2e_ms")},
      // What crossed the link: blocks kept and dropped as duplicates, and summaries.
      {"bytes_transferred", s.contains("kv_bytes_on_wire") ? StatNumber(s, "kv_bytes_on_wire")
                                                           : StatNumber(s, "kv_bytes_received")},
      {"kv_bytes_received", StatNumber(s, "kv_bytes_received")},
      {"fallback", s.value("fallback", false)},
  };
  for (const char* k : {"time_to_exact_ms",
                        "bytes_by_path",
                        "on_demand_ratio",
                        "on_demand_ratio_per_step",
                        "layer_stall_ms",
                        "stall_ms_per_step",
                        "kv_ready_ms",
                        "recomputed_locally",
                        "auto",
                        "kv_blocks_duplicate",
                        "prediction_hit_rate",
                        "present_mass_share_per_step",
                        "late_blocks",
                        "fetch_capped_blocks",
                        "selection_churn",
                        "selection_churn_per_step",
                        "selection_fresh",
                        "selection_fresh_per_step",
                        "selective_layer_steps",
                        "selective_ms",
                        "selective_ms_per_step",
                        "first_attend_ms",
                        "step_ms_per_step",
                        "blocks_requested_per_step",
                        "attended_blocks_per_step",
                        "prefill_done_ms"}) {
    if (s.contains(k)) rec[k] = s[k];
  }
  // The prefill node's side: its link-rate estimate, proactive budget, first step.
  if (s.contains("prefill") && s["prefill"].is_object() && s["prefill"].contains("stats")) {
    rec["prefill_stats"] = s["prefill"]["stats"];
  }
  // Every token's arrival (for the token-time plot), and p99 TBT from the gaps of tokens 2..n.
  if (s.contains("server") && s["server"].contains("token_ms")) {
    const json& t = s["server"]["token_ms"];
    rec["token_ms"] = t;
    std::vector<double> gaps;
    for (std::size_t i = 2; i < t.size(); ++i) gaps.push_back(t[i].get<double>() - t[i - 1].get<double>());
    if (!gaps.empty()) {
      std::sort(gaps.begin(), gaps.end());
      rec["tbt_p99_ms"] = gaps[std::min(gaps.size() - 1, static_cast<std::size_t>(0.99 * gaps.size()))];
    }
  }
  // SmartGen requests that ended before every block arrived never became exact.
  if (s.contains("bytes_by_path") && !rec.contains("time_to_exact_ms")) {
    rec["time_to_exact_ms"] = nullptr;
  }
  return rec;
}

}  // namespace smartgen::tools
