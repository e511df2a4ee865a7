#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/log.h"
#include "core/mapped_file.h"
#include "tools/ttst_bench.h"

namespace smartgen::tools {
namespace {

using nlohmann::json;

std::vector<std::int32_t> RandomPrompt(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> dist(32, 126);  // printable bytes: tokens of every vocab we make
  std::vector<std::int32_t> ids(static_cast<std::size_t>(n));
  for (auto& id : ids) id = dist(rng);
  return ids;
}

struct TtstMeasured {
  json response_stats;  // the response's `smartgen` object
  std::vector<std::int32_t> tokens;
};

Result<TtstMeasured> Request(const LocalCluster& cluster, const std::vector<std::int32_t>& prompt,
                         int max_tokens, const std::string& mode, const json& options) {
  json ext = {{"mode", mode}, {"return_token_ids", true}, {"ignore_eos", true}};
  if (!options.is_null()) ext["options"] = options;
  json body = {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}, {"smartgen", ext}};
  SG_ASSIGN_OR_RETURN(json r, cluster.Complete(body));
  TtstMeasured m;
  m.response_stats = r.value("smartgen", json::object());
  if (m.response_stats.contains("token_ids")) {
    m.tokens = m.response_stats["token_ids"].get<std::vector<std::int32_t>>();
  }
  return m;
}

double Num(const json& j, const char* a, const char* b = nullptr) {
  const json* v = &j;
  for (const char* k : {a, b}) {
    if (k == nullptr) break;
    if (!v->is_object() || !v->contains(k)) return 0.0;
    v = &(*v)[k];
  }
  return v->is_number() ? v->get<double>() : 0.0;
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
  std::map<std::int64_t, std::vector<std::int32_t>> prompts;
  for (std::int64_t n : o.prompt_tokens) prompts[n] = RandomPrompt(n, o.seed + n);

  // Calibration (for --ratio and for R): prefill time and KV bytes per prompt length,
  // measured on an unshaped link.
  std::map<std::int64_t, double> prefill_ms, kv_bytes;
  {
    LocalClusterOptions c = o.cluster;
    c.link_gbps = 0;
    std::fprintf(stderr, "[bench ttst] calibrating prefill time on an unshaped link...\n");
    SG_ASSIGN_OR_RETURN(LocalCluster cluster, LocalCluster::Start(c));
    SG_RETURN_IF_ERROR(Request(cluster, RandomPrompt(64, 7), 2, "layerwise", nullptr).status());
    for (std::int64_t n : o.prompt_tokens) {
      SG_ASSIGN_OR_RETURN(TtstMeasured m, Request(cluster, prompts[n], 2, "layerwise", nullptr));
      prefill_ms[n] = Num(m.response_stats, "prefill", "prefill_ms");
      kv_bytes[n] = m.response_stats.value("prefill", json::object())
                        .value("stats", json::object())
                        .value("kv_bytes", 0.0);
      if (prefill_ms[n] <= 0 || kv_bytes[n] <= 0) {
        return Internal("calibration request for {} tokens reported no prefill: {}", n,
                        m.response_stats.dump());
      }
      std::fprintf(stderr, "[bench ttst] n_prompt %lld: prefill %.0f ms, KV %.1f MB\n",
                   static_cast<long long>(n), prefill_ms[n], kv_bytes[n] / 1e6);
    }
  }

  // The (n_prompt, link) points, grouped by link rate: one cluster per rate.
  std::map<double, std::vector<std::pair<std::int64_t, double>>> by_link;  // link -> (n, target R)
  for (std::int64_t n : o.prompt_tokens) {
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
      for (const std::string& mode : o.modes) {
        for (int rep = 0; rep < o.reps; ++rep) {
          std::fprintf(stderr, "\r[bench ttst] %zu/%zu  link %.4g Gbit/s  n_prompt %lld  mode %-10s",
                       ++done, total, gbps, static_cast<long long>(n), mode.c_str());
          std::fflush(stderr);
          SG_ASSIGN_OR_RETURN(TtstMeasured m, Request(cluster, prompts[n], o.output_tokens, mode, options));
          const json& s = m.response_stats;
          const double p_ms = Num(s, "prefill", "prefill_ms") > 0 ? Num(s, "prefill", "prefill_ms")
                                                                  : prefill_ms[n];
          const double link_ms = gbps > 0 ? kv_bytes[n] * 8 / (gbps * 1e9) * 1e3 : 0;
          json rec = {
              {"mode", mode},
              {"n_prompt", n},
              {"link_gbps", gbps},
              {"R", gbps > 0 ? link_ms / p_ms : 0.0},
              {"target_R", target_r},
              // Token times as the router hands tokens to the HTTP front (the server's own
              // figures are taken when its writer thread gets to them, later under load).
              {"ttft_ms", s.contains("router_ttft_ms") ? Num(s, "router_ttft_ms") : Num(s, "server", "ttft_ms")},
              {"ttst_ms", s.contains("router_ttst_ms") ? Num(s, "router_ttst_ms") : Num(s, "server", "ttst_ms")},
              {"tbt_ms", Num(s, "server", "tbt_ms")},
              {"e2e_ms", Num(s, "server", "e2e_ms")},
              {"prefill_ms", p_ms},
              {"kv_bytes", kv_bytes[n]},
              {"full_kv_link_ms", link_ms},
              // What crossed the link: blocks kept and dropped as duplicates, and summaries.
              {"bytes_transferred", s.contains("kv_bytes_on_wire") ? Num(s, "kv_bytes_on_wire")
                                                                   : Num(s, "kv_bytes_received")},
              {"kv_bytes_received", Num(s, "kv_bytes_received")},
              {"fallback", s.value("fallback", false)},
              {"output_tokens", o.output_tokens},
              {"tokens", m.tokens},
              {"rep", rep},
          };
          for (const char* k : {"time_to_exact_ms", "bytes_by_path", "on_demand_ratio",
                                "on_demand_ratio_per_step", "layer_stall_ms", "kv_ready_ms",
                                "recomputed_locally", "auto", "kv_blocks_duplicate",
                                "prediction_hit_rate", "present_mass_share_per_step", "late_blocks",
                                "fetch_capped_blocks", "selection_churn"}) {
            if (s.contains(k)) rec[k] = s[k];
          }
          // Every token's arrival (for the token-time plot) and TBT over tokens 2..n: mean as
          // above, p99 from the gaps.
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
    std::printf("%-10s %7s %10s %6s %10s %10s %9s %10s %12s\n", "mode", "prompt", "link Gb/s", "R",
                "TTFT ms", "TTST ms", "TBT ms", "e2e ms", "KV bytes");
    std::size_t at = 0;
    while (at < data.size()) {
      const std::size_t nl = data.find('\n', at);
      const json r = json::parse(data.substr(at, nl - at));
      at = nl + 1;
      std::printf("%-10s %7lld %10.4g %6.2f %10.1f %10.1f %9.2f %10.1f %12.0f\n",
                  r["mode"].get<std::string>().c_str(), r["n_prompt"].get<long long>(),
                  r["link_gbps"].get<double>(), r["R"].get<double>(), r["ttft_ms"].get<double>(),
                  r["ttst_ms"].get<double>(), r["tbt_ms"].get<double>(), r["e2e_ms"].get<double>(),
                  r["bytes_transferred"].get<double>());
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
