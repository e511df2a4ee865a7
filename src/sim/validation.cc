#include "sim/validation.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/model_shape.h"
#include "sim/report.h"
#include "sim/validation_fit.h"

namespace smartgen::sim {
namespace {

constexpr double kTarget = 0.15;

double Num(const nlohmann::json& j, const char* key, double fallback) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

bool HasSelection(const MeasuredRecord& m) { return m.selection.is_object() && !m.selection.empty(); }

// Relative error sim/measured - 1, or null without a measurement.
nlohmann::json RelErr(double sim, double measured) {
  if (!(measured > 0) || !(sim >= 0)) return nullptr;
  return sim / measured - 1.0;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The rows of each point (mode, prompt, R) folded into one: the median measured and the median
// simulated of each figure over its repetitions (time to exact only where every repetition,
// measured and simulated, became exact), and their relative errors.
nlohmann::json PointMedians(const nlohmann::json& rows) {
  std::map<std::tuple<std::string, std::int64_t, double>, std::vector<const nlohmann::json*>> groups;
  for (const nlohmann::json& row : rows) {
    groups[{row["mode"].get<std::string>(), row["prompt_tokens"].get<std::int64_t>(), row["ratio"].get<double>()}]
        .push_back(&row);
  }
  nlohmann::json points = nlohmann::json::array();
  for (const auto& [key, group] : groups) {
    nlohmann::json p;
    p["mode"] = std::get<0>(key);
    p["prompt_tokens"] = std::get<1>(key);
    p["ratio"] = std::get<2>(key);
    p["n"] = group.size();
    p["tbt_is_input"] = group.front()->value("tbt_is_input", false);
    nlohmann::json error;
    for (const char* k : {"ttst_ms", "mean_tbt_ms", "e2e_ms", "time_to_exact_ms"}) {
      std::vector<double> measured, simulated;
      for (const nlohmann::json* row : group) {
        const nlohmann::json& m = (*row)["measured"][k];
        const nlohmann::json& s = (*row)["simulated"][k];
        if (m.is_number() && s.is_number()) {
          measured.push_back(m.get<double>());
          simulated.push_back(s.get<double>());
        }
      }
      const std::string name = std::string(k).substr(0, std::string(k).size() - 3);  // drop "_ms"
      if (measured.size() != group.size()) {
        error[name] = nullptr;
        continue;
      }
      const double mm = Median(measured), sm = Median(simulated);
      p["measured"][k] = mm;
      p["simulated"][k] = sm;
      error[name] = RelErr(sm, mm);
    }
    p["error"] = error;
    points.push_back(p);
  }
  return points;
}

}  // namespace

Result<std::vector<MeasuredRecord>> ReadMeasuredRecords(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open {}", path);
  std::vector<MeasuredRecord> out;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos || line[0] == '#') continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("mode") || !j["mode"].is_string()) {
      return InvalidArgument("{}:{}: not a measured record", path, n);
    }
    MeasuredRecord r;
    SG_ASSIGN_OR_RETURN(const ModeLabel label, ParseModeLabel(j["mode"].get<std::string>()));
    r.mode = label.mode;
    r.label = ModeLabelName(label);
    // Two spellings: the transcribed tables' (prompt_tokens, ratio, link_mbps, mean_tbt_ms,
    // bytes_over_full) and bench ttst's own records (n_prompt, target_R, link_gbps, tbt_ms,
    // bytes_transferred / kv_bytes, prefill_ms, R).
    const bool native = j.contains("n_prompt");
    r.prompt_tokens = static_cast<std::int64_t>(Num(j, native ? "n_prompt" : "prompt_tokens", 0));
    r.ratio = native ? Num(j, "target_R", 0) : Num(j, "ratio", 0);
    r.measured_ratio = Num(j, "R", 0);
    r.link_mbps = native ? Num(j, "link_gbps", 0) * 1e3 : Num(j, "link_mbps", 0);
    r.output_tokens = static_cast<int>(Num(j, "output_tokens", 64));
    r.rep = static_cast<int>(Num(j, "rep", 0));
    r.ttft_ms = Num(j, "ttft_ms", 0);
    r.prefill_ms = Num(j, "prefill_ms", 0);
    if (j.contains("options")) {
      if (!j["options"].is_object()) return InvalidArgument("{}:{}: options must be an object", path, n);
      r.options = j["options"];
    }
    if (!label.window_aware) r.options["window_aware"] = false;
    r.ttst_ms = Num(j, "ttst_ms", 0);
    r.mean_tbt_ms = Num(j, native ? "tbt_ms" : "mean_tbt_ms", 0);
    r.e2e_ms = Num(j, "e2e_ms", 0);
    r.bytes_over_full = native ? (Num(j, "kv_bytes", 0) > 0 ? Num(j, "bytes_transferred", 0) / Num(j, "kv_bytes", 1) : 0)
                               : Num(j, "bytes_over_full", 0);
    r.kv_bytes = Num(j, "kv_bytes", 0);
    if (j.contains("prefill_stats") && j["prefill_stats"].is_object() && j["prefill_stats"].contains("smartgen") &&
        j["prefill_stats"]["smartgen"].is_object()) {
      r.proactive_budget_bytes = Num(j["prefill_stats"]["smartgen"], "proactive_budget_bytes", 0);
      if (j["prefill_stats"]["smartgen"].contains("first_step_blocks")) {
        r.selection["first_step_blocks"] = j["prefill_stats"]["smartgen"]["first_step_blocks"];
      }
    }
    if (j.contains("bytes_by_path") && j["bytes_by_path"].is_object()) {
      r.decode_landed_bytes = Num(j["bytes_by_path"], "on_demand", 0) + Num(j["bytes_by_path"], "speculative", 0);
    }
    for (const char* k :
         {"selection_churn", "selection_churn_per_step", "selection_fresh",
          "selection_fresh_per_step", "prediction_hit_rate", "on_demand_ratio_per_step"}) {
      if (j.contains(k)) r.selection[k] = j[k];
    }
    if (j.contains("token_ms") && j["token_ms"].is_array() && j["token_ms"].size() >= 3) {
      std::vector<double> gaps;
      const nlohmann::json& t = j["token_ms"];
      for (std::size_t i = 2; i < t.size(); ++i) {
        if (t[i].is_number() && t[i - 1].is_number()) gaps.push_back(t[i].get<double>() - t[i - 1].get<double>());
      }
      if (!gaps.empty()) {
        std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
        r.median_gap_ms = gaps[gaps.size() / 2];
      }
    }
    if (j.contains("layer_stall_ms") && j["layer_stall_ms"].is_array()) {
      r.stall_ms = 0;
      for (const auto& x : j["layer_stall_ms"]) r.stall_ms += x.is_number() ? x.get<double>() : 0.0;
    }
    if (j.contains("selective_ms") && j["selective_ms"].is_object() &&
        Num(j, "selective_layer_steps", 0) > 0) {
      const nlohmann::json& p = j["selective_ms"];
      r.select_ms_per_layer_step = Num(p, "select", 0) / Num(j, "selective_layer_steps", 1);
      const double waited = Num(p, "waited_layer_steps", 0);
      if (waited > 0 && r.stall_ms >= 0) {
        r.wait_overrun_ms = std::max(0.0, (r.stall_ms - Num(p, "wait_bound", 0)) / waited);
      }
      r.selective_layer_steps = static_cast<int>(Num(j, "selective_layer_steps", 0));
    }
    if (j.contains("selective_ms_per_step") && j["selective_ms_per_step"].is_object()) {
      const nlohmann::json& p = j["selective_ms_per_step"];
      const auto series = [&](const char* k) {
        std::vector<double> v;
        if (p.contains(k) && p[k].is_array()) {
          for (const auto& x : p[k]) v.push_back(x.is_number() ? x.get<double>() : 0.0);
        }
        return v;
      };
      const std::vector<double> own = series("own"), select = series("select"),
                                local = series("local_attention"), merge = series("merge_and_stats");
      if (own.size() >= 2 && select.size() == own.size() && local.size() == own.size() &&
          merge.size() == own.size()) {
        r.selective_steps = static_cast<int>(own.size());
        for (std::size_t i = 1; i < own.size(); ++i) {  // step 1 pays first-touch and cold reads
          r.selective_own_ms += own[i] / static_cast<double>(own.size() - 1);
          r.selective_parts_ms += (select[i] + local[i] + merge[i]) / static_cast<double>(own.size() - 1);
        }
        if (j.contains("attended_blocks_per_step") && j["attended_blocks_per_step"].is_array() &&
            j["attended_blocks_per_step"].size() == own.size()) {
          for (std::size_t i = 1; i < own.size(); ++i) {
            const nlohmann::json& a = j["attended_blocks_per_step"][i];
            r.local_attended_blocks += a.is_number() ? a.get<double>() : 0.0;
            r.local_attention_ms += local[i];
          }
        }
        const double later = own.size() >= 3 ? Median(std::vector<double>(select.begin() + 1, select.end())) : 0.0;
        if (later > 0) r.first_select_ratio = select.front() / later;
      }
    }
    if (j.contains("step_ms_per_step") && j["step_ms_per_step"].is_array() && j["step_ms_per_step"].size() >= 3) {
      std::vector<double> steps;
      for (const auto& x : j["step_ms_per_step"]) steps.push_back(x.is_number() ? x.get<double>() : 0.0);
      const double first = steps.front();
      steps.erase(steps.begin());
      r.first_step_excess_ms = first - Median(steps);
    }
    r.time_to_exact_ms = Num(j, "time_to_exact_ms", -1);
    if (r.prompt_tokens <= 0 || r.link_mbps <= 0 || r.ttft_ms < 0) {
      return InvalidArgument("{}:{}: prompt_tokens and link_mbps must be > 0", path, n);
    }
    out.push_back(r);
  }
  return out;
}

Result<nlohmann::json> Validate(const std::vector<MeasuredRecord>& records,
                                const ValidationOptions& options) {
  ModelShape shape = options.shape;
  if (shape.n_layers <= 0) {
    SG_ASSIGN_OR_RETURN(shape, ModelShapeByName("smollm2-135m"));
  }
  // The colocated record of each (prompt, R) point: the decode step every mode shares.
  std::map<std::pair<std::int64_t, double>, const MeasuredRecord*> colocated;
  std::map<std::tuple<std::int64_t, double, int>, const MeasuredRecord*> colocated_rep;
  for (const MeasuredRecord& r : records) {
    if (r.mode != Mode::kColocated) continue;
    colocated.try_emplace({r.prompt_tokens, r.ratio}, &r);
    colocated_rep[{r.prompt_tokens, r.ratio, r.rep}] = &r;
  }
  // The attention rate from the colocated steps' growth with the context (two or more prompt
  // lengths): what a decode step's attention costs per key on this machine.
  Hardware cpu = options.cpu;
  if (options.calibration != Calibration::kPreset && cpu.attention_bytes_per_s > 0) {
    const double rate = internal::FitAttentionRate(colocated, shape);
    if (rate > 0) cpu.attention_bytes_per_s = rate;
  }
  // The first-touch cost of a freshly written KV cache, from every colocated first step.
  if (options.calibration != Calibration::kPreset && cpu.first_touch_bytes_per_s > 0) {
    std::vector<const MeasuredRecord*> all;
    for (const auto& [key, r] : colocated_rep) all.push_back(r);
    const double rate = internal::FitFirstTouchRate(all, shape);
    if (rate >= 0) cpu.first_touch_bytes_per_s = rate;
  }
  // The cold-read cost of a decode node's first step after idling, from the dense transfer
  // modes' first steps (the SmartGen records it is then checked against are not used); none
  // where the records do not say (older sweeps, recorded before the engine kept step times).
  if (options.calibration != Calibration::kPreset && cpu.cold_read_bytes_per_s > 0) {
    cpu.cold_read_bytes_per_s = std::max(0.0, internal::FitColdReadRate(records, CostModel(cpu, shape)));
  }
  // A selective layer's local attention, own cost and the CPU of landing bytes, from the
  // SmartGen records' step phases (their waits, which the simulation then predicts, do not
  // enter them).
  if (options.calibration != Calibration::kPreset) {
    if (const auto local = internal::FitLocalAttention(records, shape, ClusterOptions{}.block_tokens)) {
      cpu.local_attention_bytes_per_s = local->bytes_per_s;
      cpu.local_attention_layer_s = local->layer_s;
    }
    const bool local = cpu.local_attention_bytes_per_s > 0;
    if (const auto costs = internal::FitSelectiveCosts(records, colocated_rep, CostModel(cpu, shape), local)) {
      cpu.selective_layer_s = costs->layer_s;
      if (cpu.transfer_cpu_s_per_byte > 0) cpu.transfer_cpu_s_per_byte = costs->transfer_cpu_s_per_byte;
    }
    // And how much longer its first selective step's scoring takes than a later step's.
    const std::optional<double> first = internal::FitFirstSelectExtra(records, shape);
    if (first.has_value()) cpu.first_select_extra = std::max(0.0, *first);
  }

  nlohmann::json rows = nlohmann::json::array();
  struct Acc {
    std::vector<double> ttst, tbt, e2e, exact;
  };
  std::map<std::string, Acc> acc;
  for (const MeasuredRecord& m : records) {
    Hardware hw = cpu;
    if (options.calibration != Calibration::kPreset) {
      const CostModel base(hw, shape);
      // The request's own prefill (bench ttst records it; older tables only TTFT). A colocated
      // record's prefill_ms is the point's calibration prefill (no prefill node reported one):
      // its own is its TTFT, the prompt computed on the decode node.
      const double prefill_ms = m.mode != Mode::kColocated && m.prefill_ms > 0 ? m.prefill_ms : m.ttft_ms;
      if (prefill_ms > 0) hw.compute_eff *= base.Prefill(m.prompt_tokens) / (prefill_ms / 1e3);
      // Mean dense step over the output (context grows by output_tokens / 2 on average).
      const std::int64_t context = m.prompt_tokens + m.output_tokens / 2;
      const Seconds step = base.DecodeStep(1, context);
      // The step's attention keeps its own rate; the measured step scales the rest.
      Seconds attention = 0;
      if (hw.attention_bytes_per_s > 0) {
        for (int l = 0; l < shape.n_layers; ++l) {
          attention += base.DecodeAttention(static_cast<double>(shape.LayerKvTokens(l, context)));
        }
      }
      auto scale_to = [&](double measured_ms) {
        const double rest = measured_ms / 1e3 - attention;
        if (rest > 0) hw.mem_eff *= (step - attention) / rest;
      };
      // The colocated record of the same repetition, else the point's first.
      const MeasuredRecord* coloc = nullptr;
      if (auto same = colocated_rep.find({m.prompt_tokens, m.ratio, m.rep}); same != colocated_rep.end()) {
        coloc = same->second;
      } else if (auto first = colocated.find({m.prompt_tokens, m.ratio}); first != colocated.end()) {
        coloc = first->second;
      }
      // A SmartGen record's own gaps hold its waits: its dense step is colocated's.
      const bool own_kind = options.calibration == Calibration::kOwn || options.calibration == Calibration::kOwnAll;
      const bool own = own_kind && m.median_gap_ms > 0 &&
                       (m.mode != Mode::kSmartgen || coloc == nullptr ||
                        options.calibration == Calibration::kOwnAll);
      if (own_kind && m.mode == Mode::kSmartgen && m.select_ms_per_layer_step > 0) {
        // The node's selection time per layer-step over the prompt's blocks per KV head.
        const double blocks = static_cast<double>((m.prompt_tokens + 15) / 16);
        hw.select_flops =
            4.0 * shape.n_heads * shape.head_dim * blocks / (m.select_ms_per_layer_step / 1e3);
        hw.wait_overrun_s = m.wait_overrun_ms / 1e3;
      }
      if (own) {
        scale_to(m.median_gap_ms);
      } else if (coloc != nullptr && coloc->mean_tbt_ms > 0) {
        scale_to(own_kind && coloc->median_gap_ms > 0 ? coloc->median_gap_ms : coloc->mean_tbt_ms);
      }
    }
    ClusterSpec spec;
    spec.model = shape;
    spec.prefill_hw = hw;
    spec.decode_hw = hw;
    spec.stats = options.stats;
    if (options.replay_selection && HasSelection(m)) {
      SG_ASSIGN_OR_RETURN(spec.stats, SelectionStatsFromRecord(m.selection, options.stats));
    }
    spec.options.mode = m.mode;
    spec.options.link.gbps = m.link_mbps / 1e3;
    spec.options.link.latency_s = options.latency_s;
    spec.options.link.burst_bytes =
        options.burst_bytes;  // the testbed's links: the engine's bucket
    spec.options.link.header_bytes = options.header_bytes;
    spec.options.smartgen = options.smartgen;
    if (!m.options.empty()) {
      // The run's options over the defaults (the same keys as a request's smartgen.options).
      nlohmann::json merged = ToJson(options.smartgen);
      merged.update(m.options);
      SG_ASSIGN_OR_RETURN(spec.options.smartgen, ParseSmartgenSimOptions(merged));
    }
    // The node's own proactive budget (its prefill estimate, not the prefill it then ran),
    // unless the run fixed one: the records list every option, 0 meaning "sized from the link".
    const bool fixed_ratio = m.options.contains("proactive_ratio") && m.options["proactive_ratio"].is_number() &&
                             m.options["proactive_ratio"].get<double>() > 0;
    if (options.calibration != Calibration::kPreset && m.proactive_budget_bytes > 0 && m.kv_bytes > 0 &&
        !fixed_ratio) {
      spec.options.smartgen.proactive_ratio = m.kv_bytes / m.proactive_budget_bytes;
    }
    spec.options.max_batch = 1;
    WorkloadOptions w;
    w.prompt_min = w.prompt_max = m.prompt_tokens;
    w.output_min = w.output_max = m.output_tokens;
    SG_ASSIGN_OR_RETURN(SimResult result, RunCluster(spec, FixedBatch(1, 0, w)));
    const nlohmann::json sim = RequestRecord(*result.requests.front());
    auto get = [&](const char* k) { return sim[k].is_number() ? sim[k].get<double>() : -1.0; };
    nlohmann::json row;
    row["prompt_tokens"] = m.prompt_tokens;
    row["ratio"] = m.ratio;
    row["link_mbps"] = m.link_mbps;
    if (m.measured_ratio > 0) row["measured_R"] = m.measured_ratio;
    row["mode"] = m.label.empty() ? std::string(ModeName(m.mode)) : m.label;
    row["output_tokens"] = m.output_tokens;
    row["rep"] = m.rep;
    row["options"] = m.options;
    row["simulated_mode"] = sim["mode"];
    row["selection_stats"] = spec.stats.name;
    row["measured"] = {
        {"ttft_ms", m.ttft_ms},
        {"ttst_ms", m.ttst_ms},
        {"mean_tbt_ms", m.mean_tbt_ms},
        {"e2e_ms", m.e2e_ms},
        {"bytes_over_full", m.bytes_over_full},
        {"stall_ms", m.stall_ms >= 0 ? nlohmann::json(m.stall_ms) : nlohmann::json()},
        {"time_to_exact_ms",
         m.time_to_exact_ms >= 0 ? nlohmann::json(m.time_to_exact_ms) : nlohmann::json()}};
    row["simulated"] = {{"ttft_ms", sim["ttft_ms"]},
                        {"ttst_ms", sim["ttst_ms"]},
                        {"mean_tbt_ms", sim["mean_tbt_ms"]},
                        {"e2e_ms", sim["e2e_ms"]},
                        {"bytes_over_full", sim["bytes_over_full"]},
                        {"stall_ms", sim["stall_ms"]},
                        {"stall_ms_per_step", sim["stall_ms_per_step"]},
                        {"token_gaps_ms", sim["token_gaps_ms"]},
                        {"time_to_exact_ms", sim["time_to_exact_ms"]},
                        {"bytes", sim["bytes"]}};
    const nlohmann::json e_ttst = RelErr(get("ttst_ms"), m.ttst_ms);
    const nlohmann::json e_tbt = RelErr(get("mean_tbt_ms"), m.mean_tbt_ms);
    const nlohmann::json e_e2e = RelErr(get("e2e_ms"), m.e2e_ms);
    nlohmann::json e_exact = nullptr;
    if (m.time_to_exact_ms >= 0) e_exact = RelErr(get("time_to_exact_ms"), m.time_to_exact_ms);
    row["error"] = {{"ttst", e_ttst}, {"mean_tbt", e_tbt}, {"e2e", e_e2e}, {"time_to_exact", e_exact}};
    // Exactness must agree too: a request the testbed never saw exact should not be in the
    // simulation either (and vice versa); a disagreement counts as a miss.
    if (m.mode != Mode::kColocated) {  // colocated never transfers: nothing to agree on
      row["exact_agrees"] = (m.time_to_exact_ms >= 0) == (get("time_to_exact_ms") >= 0);
    }
    Acc& a = acc[m.label.empty() ? std::string(ModeName(m.mode)) : m.label];
    if (e_ttst.is_number()) a.ttst.push_back(std::abs(e_ttst.get<double>()));
    const bool tbt_is_input = (options.calibration == Calibration::kRecorded && m.mode == Mode::kColocated) ||
                              (options.calibration != Calibration::kPreset &&
                               options.calibration != Calibration::kRecorded && m.mode != Mode::kSmartgen);
    row["tbt_is_input"] = tbt_is_input;
    if (e_tbt.is_number() && !tbt_is_input) a.tbt.push_back(std::abs(e_tbt.get<double>()));
    if (e_e2e.is_number()) a.e2e.push_back(std::abs(e_e2e.get<double>()));
    if (e_exact.is_number()) a.exact.push_back(std::abs(e_exact.get<double>()));
    rows.push_back(row);
  }
  auto sum = [](const std::vector<double>& v) -> nlohmann::json {
    if (v.empty()) return {{"n", 0}};
    double s = 0, mx = 0;
    int within = 0;
    for (double x : v) {
      s += x;
      mx = std::max(mx, x);
      within += x <= kTarget ? 1 : 0;
    }
    return {{"n", v.size()}, {"mean_abs", s / v.size()}, {"max_abs", mx},
            {"within_15pct", static_cast<double>(within) / v.size()}};
  };
  auto summarise = [&](const std::map<std::string, Acc>& by_mode) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [mode, a] : by_mode) {
      out[mode] = {{"ttst", sum(a.ttst)}, {"mean_tbt", sum(a.tbt)}, {"e2e", sum(a.e2e)},
                   {"time_to_exact", sum(a.exact)}};
    }
    return out;
  };
  const nlohmann::json summary = summarise(acc);
  const nlohmann::json points = PointMedians(rows);
  std::map<std::string, Acc> point_acc;
  for (const nlohmann::json& p : points) {
    Acc& a = point_acc[p["mode"].get<std::string>()];
    const nlohmann::json& e = p["error"];
    if (e["ttst"].is_number()) a.ttst.push_back(std::abs(e["ttst"].get<double>()));
    if (e["mean_tbt"].is_number() && !p["tbt_is_input"].get<bool>()) a.tbt.push_back(std::abs(e["mean_tbt"].get<double>()));
    if (e["e2e"].is_number()) a.e2e.push_back(std::abs(e["e2e"].get<double>()));
    if (e["time_to_exact"].is_number()) a.exact.push_back(std::abs(e["time_to_exact"].get<double>()));
  }
  const nlohmann::json point_summary = summarise(point_acc);
  return nlohmann::json{
      {"calibration", options.calibration == Calibration::kRecorded ? "recorded"
                      : options.calibration == Calibration::kOwn    ? "own"
                      : options.calibration == Calibration::kOwnAll ? "own-all"
                                                                    : "preset"},
      {"cpu", options.cpu.ToString()},
      // What the calibration fitted across the records (the preset's values otherwise).
      {"fitted", {{"attention_bytes_per_s", cpu.attention_bytes_per_s},
                  {"first_touch_bytes_per_s", cpu.first_touch_bytes_per_s},
                  {"cold_read_bytes_per_s", cpu.cold_read_bytes_per_s},
                  {"selective_layer_s", cpu.selective_layer_s},
                  {"transfer_cpu_s_per_byte", cpu.transfer_cpu_s_per_byte},
                  {"local_attention_bytes_per_s", cpu.local_attention_bytes_per_s},
                  {"local_attention_layer_s", cpu.local_attention_layer_s},
                  {"first_select_extra", cpu.first_select_extra}}},
      {"selection_stats", options.replay_selection ? "replay (" + options.stats.name + " elsewhere)" : options.stats.name},
      {"records", rows},
      {"summary", summary},
      {"points", points},
      {"point_summary", point_summary}};
}

}  // namespace smartgen::sim
