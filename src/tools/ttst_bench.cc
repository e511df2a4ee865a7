#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/log.h"
#include "core/mapped_file.h"
#include "tools/ttst_accuracy.h"
#include "tools/ttst_bench.h"
#include "tools/ttst_prompts.h"
#include "tools/ttst_request.h"

namespace smartgen::tools {
namespace {

using nlohmann::json;


Result<TtstMeasured> Request(const LocalCluster& cluster, const std::vector<std::int32_t>& prompt,
                             int max_tokens, const std::string& label, const json& options) {
  BenchRequest rq;
  rq.prompt = prompt;
  rq.max_tokens = max_tokens;
  rq.mode = label;  // MODE[:VARIANT...], resolved by SendBenchRequest
  rq.options = options;
  return SendBenchRequest(cluster, rq);
}

}  // namespace

Status RunTtstBench(TtstBenchOptions o) {
  if (o.link_gbps.empty() && o.ratios.empty()) o.link_gbps = {0.0};
  if (!o.link_gbps.empty() && !o.ratios.empty()) {
    return InvalidArgument("give --link-gbps or --ratio, not both");
  }
  json options = nullptr;
  if (!o.options_json.empty()) {
    options = json::parse(o.options_json, nullptr, false);
    if (options.is_discarded()) return InvalidArgument("--options is not valid JSON");
  }
  PromptSetOptions ps;
  ps.set = o.prompt_set;
  ps.prompt_tokens = o.prompt_tokens;
  ps.count = o.prompt_count;
  ps.seed = o.seed;
  ps.model_path = o.cluster.model_path;
  SG_ASSIGN_OR_RETURN(PromptSet set, LoadPromptSet(ps));
  std::map<std::int64_t, const PromptGroup*> groups;
  for (const PromptGroup& g : set.groups) groups[g.n_prompt] = &g;
  std::vector<std::int64_t> lengths;
  for (auto& [n, g] : groups) lengths.push_back(n);

  // Calibration (for --ratio and for R): prefill time and KV bytes per prompt length,
  // measured on an unshaped link: the faster of two prefills, since a hiccup of a shared
  // machine only lengthens one (2026-12-04: one of 8.7 s, where all but one of the point's 20
  // requests took 4.9-5.5 s, set a link for R = 1 that ran at R = 1.5).
  std::map<std::int64_t, double> prefill_ms, kv_bytes;
  {
    LocalClusterOptions c = o.cluster;
    c.link_gbps = 0;
    std::fprintf(stderr, "[bench ttst] calibrating prefill time on an unshaped link...\n");
    SG_ASSIGN_OR_RETURN(LocalCluster cluster, LocalCluster::Start(c));
    SG_RETURN_IF_ERROR(Request(cluster, RandomPrompt(64, 7), 2, "layerwise", nullptr).status());
    constexpr int kCalibrationPrefills = 2;
    for (std::int64_t n : lengths) {
      for (int i = 0; i < kCalibrationPrefills; ++i) {
        SG_ASSIGN_OR_RETURN(TtstMeasured m,
                            Request(cluster, groups[n]->prompts[0].prompt, 2, "layerwise", nullptr));
        const double ms = StatNumber(m.response_stats, "prefill", "prefill_ms");
        kv_bytes[n] = m.response_stats.value("prefill", json::object())
                          .value("stats", json::object())
                          .value("kv_bytes", 0.0);
        if (ms <= 0 || kv_bytes[n] <= 0) {
          return Internal("calibration request for {} tokens reported no prefill: {}", n,
                          m.response_stats.dump());
        }
        std::fprintf(stderr, "[bench ttst] n_prompt %lld: prefill %.0f ms, KV %.1f MB\n",
                     static_cast<long long>(n), ms, kv_bytes[n] / 1e6);
        prefill_ms[n] = i == 0 ? ms : std::min(prefill_ms[n], ms);
      }
    }
  }

  // The (n_prompt, link) points, grouped by link rate: one cluster per rate.
  std::map<double, std::vector<std::pair<std::int64_t, double>>> by_link;  // link -> (n, target R)
  for (std::int64_t n : lengths) {
    if (!o.ratios.empty()) {
      for (double r : o.ratios) {
        const double gbps = kv_bytes[n] * 8 / (r * prefill_ms[n] / 1e3) / 1e9;
        by_link[gbps].push_back({n, r});
      }
    } else {
      for (double g : o.link_gbps) by_link[g].push_back({n, 0.0});
    }
  }
  const std::size_t total = [&] {
    std::size_t t = 0;
    for (auto& [g, pts] : by_link) t += pts.size() * o.modes.size() * o.reps;
    if (set.task != PromptTask::kRandom) t = by_link.size();
    return t;
  }();

  std::string data;
  std::size_t done = 0;
  for (auto& [gbps, points] : by_link) {
    LocalClusterOptions c = o.cluster;
    c.link_gbps = gbps;
    SG_ASSIGN_OR_RETURN(LocalCluster cluster, LocalCluster::Start(c));
    SG_RETURN_IF_ERROR(Request(cluster, RandomPrompt(32, 9), 2, "colocated", nullptr).status());
    for (auto& [n, target_r] : points) {
      const double link_ms = gbps > 0 ? kv_bytes[n] * 8 / (gbps * 1e9) * 1e3 : 0;
      if (set.task != PromptTask::kRandom) {
        PromptPointOptions po;
        po.modes = o.modes;
        po.output_tokens = o.output_tokens;
        po.options = options;
        po.progress = [&](const std::string& mode, std::size_t i, std::size_t of) {
          std::fprintf(stderr, "\r[bench ttst] link %.4g Gbit/s  n_prompt %lld  %zu/%zu  mode %-10s", gbps,
                       static_cast<long long>(n), i, of, mode.c_str());
          std::fflush(stderr);
        };
        SG_ASSIGN_OR_RETURN(std::vector<json> recs, MeasurePromptPoint(cluster, set.task, *groups[n], po));
        for (json& rec : recs) {
          rec["n_prompt"] = n;
          rec["prompt_set"] = o.prompt_set;
          rec["link_gbps"] = gbps;
          rec["R"] = gbps > 0 ? link_ms / prefill_ms[n] : 0.0;
          rec["target_R"] = target_r;
          rec["prefill_ms"] = prefill_ms[n];
          rec["kv_bytes"] = kv_bytes[n];
          rec["full_kv_link_ms"] = link_ms;
          rec["output_tokens"] = o.output_tokens;
          SG_ASSIGN_OR_RETURN(rec["options"], EffectiveOptions(rec.value("mode", ""), options));
          data += rec.dump() + "\n";
          if (o.json_out) std::printf("%s\n", rec.dump().c_str());
        }
        SG_RETURN_IF_ERROR(core::WriteStringToFile(o.data_out, data));
        continue;
      }
      // Repetitions outermost: each repetition runs every mode back to back, so a mode and the
      // colocated run it is compared with (and calibrated from) share the machine's state.
      for (int rep = 0; rep < o.reps; ++rep) {
        for (const std::string& mode : o.modes) {
          std::fprintf(stderr, "\r[bench ttst] %zu/%zu  link %.4g Gbit/s  n_prompt %lld  mode %-18s",
                       ++done, total, gbps, static_cast<long long>(n), mode.c_str());
          std::fflush(stderr);
          SG_ASSIGN_OR_RETURN(TtstMeasured m, Request(cluster, groups[n]->prompts[0].prompt,
                                                      o.output_tokens, mode, options));
          const json& s = m.response_stats;
          const double p_ms = StatNumber(s, "prefill", "prefill_ms") > 0
                                  ? StatNumber(s, "prefill", "prefill_ms") : prefill_ms[n];
          json rec = {
              {"mode", mode},
              {"n_prompt", n},
              {"link_gbps", gbps},
              {"R", gbps > 0 ? link_ms / p_ms : 0.0},
              {"target_R", target_r},
              {"prefill_ms", p_ms},
              {"kv_bytes", kv_bytes[n]},
              {"full_kv_link_ms", link_ms},
              {"output_tokens", o.output_tokens},
              {"tokens", m.tokens},
              {"rep", rep},
          };
          rec.update(RequestFields(s));
          SG_ASSIGN_OR_RETURN(rec["options"], EffectiveOptions(mode, options));
          data += rec.dump() + "\n";
          // Written after every record, so a long sweep that stops early keeps what it measured.
          SG_RETURN_IF_ERROR(core::WriteStringToFile(o.data_out, data));
          if (o.json_out) {
            std::printf("%s\n", rec.dump().c_str());
            std::fflush(stdout);
          }
        }
      }
    }
  }
  std::fprintf(stderr, "\n");

  // Table (one line per record) unless JSON was asked for.
  if (!o.json_out) {
    std::printf("%-18s %7s %10s %6s %10s %10s %9s %10s %12s  %s\n", "mode", "prompt", "link Gb/s", "R",
                "TTFT ms", "TTST ms", "TBT ms", "e2e ms", "KV bytes", "accuracy");
    std::size_t at = 0;
    while (at < data.size()) {
      const std::size_t nl = data.find('\n', at);
      const json r = json::parse(data.substr(at, nl - at));
      at = nl + 1;
      std::string acc;
      if (r.contains("accuracy")) acc = fmt::format("{:.3f} ({:+.1f} pt)", r["accuracy"].get<double>(),
                                                    r["accuracy_delta"].get<double>());
      if (r.contains("agreement")) acc = fmt::format("agree {:.4f}, exact {:.1f}", r["agreement"].get<double>(),
                                                     r["exact_match_mean"].get<double>());
      std::printf("%-18s %7lld %10.4g %6.2f %10.1f %10.1f %9.2f %10.1f %12.0f  %s\n",
                  r["mode"].get<std::string>().c_str(), r["n_prompt"].get<long long>(),
                  r["link_gbps"].get<double>(), r["R"].get<double>(), r["ttft_ms"].get<double>(),
                  r["ttst_ms"].get<double>(), r["tbt_ms"].get<double>(), r["e2e_ms"].get<double>(),
                  r["bytes_transferred"].get<double>(), acc.c_str());
    }
  }
  if (!o.plot.empty()) {
    // Debian's python3 (with python3-matplotlib), not whatever python3 comes first on PATH.
    const char* python = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    const std::string cmd =
        fmt::format("{} scripts/plot_ttst.py '{}' '{}' >&2", python, o.data_out, o.plot);
    if (std::system(cmd.c_str()) != 0) {
      std::fprintf(stderr, "[bench ttst] plotting failed (%s); the data is in %s\n", cmd.c_str(),
                   o.data_out.c_str());
    } else {
      std::fprintf(stderr, "[bench ttst] plot: %s, data: %s\n", o.plot.c_str(), o.data_out.c_str());
    }
  }
  return Status::Ok();
}

}  // namespace smartgen::tools
