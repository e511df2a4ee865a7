#include "tools/ttst_accuracy.h"

#include <algorithm>
#include <map>

#include "tools/ttst_request.h"

namespace smartgen::tools {
namespace {

using nlohmann::json;

// Sums of one mode's requests.
struct ModeTally {
  std::vector<double> ttst, ttft, tbt, e2e, bytes, share2, gaps;
  int fallbacks = 0;
  int correct = 0, answered = 0;        // retrieval
  int agreed = 0, compared = 0;         // text, teacher-forced
  double exact_match = 0;               // text, free-running (sum over prompts)
  int late_blocks = 0;
  // SmartGen's selection statistics (the simulator replays their means over the prompts).
  std::vector<double> fresh, hit;
  std::vector<double> fresh_step_sum;
  std::vector<int> fresh_step_n;
  json example;  // the first request's own record (its figures in full)

  void AddLatency(const json& rec) {
    if (example.is_null()) example = rec;
    ttst.push_back(rec.value("ttst_ms", 0.0));
    ttft.push_back(rec.value("ttft_ms", 0.0));
    tbt.push_back(rec.value("tbt_ms", 0.0));
    e2e.push_back(rec.value("e2e_ms", 0.0));
    bytes.push_back(rec.value("bytes_transferred", 0.0));
    if (rec.value("fallback", false)) ++fallbacks;
    if (rec.contains("present_mass_share_per_step") && rec["present_mass_share_per_step"].size() > 1 &&
        rec["present_mass_share_per_step"][1].is_number()) {
      share2.push_back(rec["present_mass_share_per_step"][1].get<double>());
    }
    if (rec.contains("late_blocks") && rec["late_blocks"].is_number()) {
      late_blocks += rec["late_blocks"].get<int>();
    }
    if (rec.contains("selection_fresh") && rec["selection_fresh"].is_number()) {
      fresh.push_back(rec["selection_fresh"].get<double>());
    }
    if (rec.contains("prediction_hit_rate") && rec["prediction_hit_rate"].is_number()) {
      hit.push_back(rec["prediction_hit_rate"].get<double>());
    }
    if (rec.contains("selection_fresh_per_step") && rec["selection_fresh_per_step"].is_array()) {
      const json& f = rec["selection_fresh_per_step"];
      if (fresh_step_sum.size() < f.size()) {
        fresh_step_sum.resize(f.size(), 0.0);
        fresh_step_n.resize(f.size(), 0);
      }
      for (std::size_t i = 0; i < f.size(); ++i) {
        if (!f[i].is_number()) continue;
        fresh_step_sum[i] += f[i].get<double>();
        ++fresh_step_n[i];
      }
    }
    if (rec.contains("token_ms")) {
      const json& t = rec["token_ms"];
      for (std::size_t i = 2; i < t.size(); ++i) gaps.push_back(t[i].get<double>() - t[i - 1].get<double>());
    }
  }
};

double Mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

int MatchLength(const std::vector<std::int32_t>& a, const std::vector<std::int32_t>& b) {
  int n = 0;
  while (n < static_cast<int>(std::min(a.size(), b.size())) && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

Result<std::vector<json>> MeasurePromptPoint(const LocalCluster& cluster, PromptTask task,
                                             const PromptGroup& group, const PromptPointOptions& o) {
  std::vector<std::string> modes = {"colocated"};
  for (const std::string& m : o.modes) {
    if (m != "colocated") modes.push_back(m);
  }
  const std::size_t n = group.prompts.size();
  std::vector<std::vector<std::int32_t>> reference(n);  // colocated's greedy output (text)
  std::map<std::string, ModeTally> tallies;
  std::size_t done = 0;
  for (const std::string& mode : modes) {
    ModeTally& t = tallies[mode];
    for (std::size_t i = 0; i < n; ++i) {
      const BenchPrompt& p = group.prompts[i];
      if (o.progress) o.progress(mode, ++done, n * modes.size());
      BenchRequest rq;
      rq.prompt = p.prompt;
      rq.max_tokens = o.output_tokens;
      rq.mode = mode;
      rq.options = mode == "colocated" ? json(nullptr) : o.options;
      if (task == PromptTask::kRetrieval) {
        rq.forced = {p.forced_first};
        SG_ASSIGN_OR_RETURN(TtstMeasured m, SendBenchRequest(cluster, rq));
        if (m.argmax.size() < 2) return Internal("retrieval request {} ended before token 2", p.label);
        t.AddLatency(RequestFields(m.response_stats));
        ++t.answered;
        if (m.argmax[1] == p.answer) ++t.correct;
        continue;
      }
      // Text: a free run (latency, exact match), then the teacher-forced run.
      SG_ASSIGN_OR_RETURN(TtstMeasured free_run, SendBenchRequest(cluster, rq));
      t.AddLatency(RequestFields(free_run.response_stats));
      if (mode == "colocated") reference[i] = free_run.tokens;
      t.exact_match += MatchLength(free_run.tokens, reference[i]);
      rq.forced = reference[i];
      rq.max_tokens = static_cast<int>(reference[i].size());
      SG_ASSIGN_OR_RETURN(TtstMeasured forced, SendBenchRequest(cluster, rq));
      for (std::size_t k = 1; k < std::min(forced.argmax.size(), reference[i].size()); ++k) {
        ++t.compared;
        if (forced.argmax[k] == reference[i][k]) ++t.agreed;
      }
    }
  }
  std::vector<json> out;
  const double colocated_accuracy =
      tallies["colocated"].answered ? double(tallies["colocated"].correct) / tallies["colocated"].answered : 0;
  for (const std::string& mode : modes) {
    const ModeTally& t = tallies[mode];
    json rec = {
        {"mode", mode},
        {"prompts", n},
        {"task", task == PromptTask::kRetrieval ? "retrieval" : "text"},
        {"ttst_ms", Mean(t.ttst)},
        {"ttst_p50_ms", Quantile(t.ttst, 0.5)},
        {"ttft_ms", Mean(t.ttft)},
        {"tbt_ms", Mean(t.tbt)},
        {"tbt_p99_ms", Quantile(t.gaps, 0.99)},
        {"e2e_ms", Mean(t.e2e)},
        {"bytes_transferred", Mean(t.bytes)},
        {"fallbacks", t.fallbacks},
        {"late_blocks", t.late_blocks},
    };
    if (!t.share2.empty()) rec["present_mass_share_step2"] = Mean(t.share2);
    if (!t.fresh.empty()) rec["selection_fresh"] = Mean(t.fresh);
    if (!t.hit.empty()) rec["prediction_hit_rate"] = Mean(t.hit);
    if (!t.fresh_step_sum.empty()) {
      json per_step = json::array();
      for (std::size_t i = 0; i < t.fresh_step_sum.size(); ++i) {
        per_step.push_back(t.fresh_step_sum[i] / std::max(1, t.fresh_step_n[i]));
      }
      rec["selection_fresh_per_step"] = per_step;  // mean over the prompts, per step
    }
    rec["example"] = t.example;
    if (task == PromptTask::kRetrieval) {
      const double acc = t.answered ? double(t.correct) / t.answered : 0;
      rec["accuracy"] = acc;
      rec["accuracy_delta"] = 100.0 * (acc - colocated_accuracy);
    } else {
      rec["agreement"] = t.compared ? double(t.agreed) / t.compared : 0;
      rec["compared"] = t.compared;
      rec["exact_match_mean"] = t.exact_match / static_cast<double>(n);
    }
    out.push_back(std::move(rec));
  }
  return out;
}

}  // namespace smartgen::tools
