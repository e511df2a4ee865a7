#include "sim/report.h"

#include <algorithm>
#include <cmath>

namespace smartgen::sim {
namespace {

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(sorted.size() - 1, lo + 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

double MeanTbtMs(const SimRequest& r) {
  if (r.tokens.size() < 3) return 0;
  return (r.tokens.back() - r.tokens[1]) / static_cast<double>(r.tokens.size() - 2) * 1e3;
}

}  // namespace

nlohmann::json Distribution(std::vector<double> v) {
  if (v.empty()) return {{"n", 0}};
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  return {{"n", v.size()},
          {"mean", sum / static_cast<double>(v.size())},
          {"p50", Percentile(v, 0.5)},
          {"p90", Percentile(v, 0.9)},
          {"p99", Percentile(v, 0.99)},
          {"max", v.back()}};
}

bool MeetsSlo(const SimRequest& r, const Slo& slo) {
  if (!r.finished() || r.tokens.empty()) return false;
  if (slo.ttft_ms > 0 && (r.tokens[0] - r.arrival) * 1e3 > slo.ttft_ms) return false;
  if (slo.ttst_ms > 0 && r.tokens.size() >= 2 && (r.tokens[1] - r.tokens[0]) * 1e3 > slo.ttst_ms) {
    return false;
  }
  if (slo.mean_tbt_ms > 0 && MeanTbtMs(r) > slo.mean_tbt_ms) return false;
  return true;
}

nlohmann::json RequestRecord(const SimRequest& r) {
  nlohmann::json j;
  j["id"] = r.id;
  j["mode"] = ModeName(r.mode);
  j["arrival_ms"] = r.arrival * 1e3;
  j["prompt_tokens"] = r.prompt_tokens;
  j["output_tokens"] = r.output_tokens;
  j["prefill_node"] = r.prefill_node;
  j["decode_node"] = r.decode_node;
  const bool has1 = !r.tokens.empty(), has2 = r.tokens.size() >= 2;
  j["ttft_ms"] = has1 ? nlohmann::json((r.tokens[0] - r.arrival) * 1e3) : nlohmann::json();
  j["ttst_ms"] = has2 ? nlohmann::json((r.tokens[1] - r.tokens[0]) * 1e3) : nlohmann::json();
  j["mean_tbt_ms"] = r.tokens.size() >= 3 ? nlohmann::json(MeanTbtMs(r)) : nlohmann::json();
  j["e2e_ms"] = r.finished() ? nlohmann::json((r.done - r.arrival) * 1e3) : nlohmann::json();
  j["prefill_ms"] = r.prefill_end >= 0 ? nlohmann::json((r.prefill_end - r.prefill_start) * 1e3)
                                       : nlohmann::json();
  j["time_to_exact_ms"] = r.exact >= 0 ? nlohmann::json((r.exact - r.arrival) * 1e3) : nlohmann::json();
  double total = 0;
  nlohmann::json bytes = nlohmann::json::object();
  for (int p = 0; p < static_cast<int>(Path::kCount); ++p) {
    if (r.bytes[p] > 0) bytes[std::string(PathName(static_cast<Path>(p)))] = r.bytes[p];
    total += r.bytes[p];
  }
  j["bytes"] = bytes;
  j["bytes_over_full"] = r.full_kv_bytes > 0 ? total / r.full_kv_bytes : 0.0;
  j["cancelled_bytes"] = r.cancelled_bytes;
  j["stall_ms"] = r.stall_s * 1e3;
  std::vector<double> stalls;
  for (double st : r.stall_per_step_s) stalls.push_back(st * 1e3);
  j["stall_ms_per_step"] = stalls;
  j["blocks_requested_per_step"] = r.requested_per_step;
  j["predicted_blocks"] = r.predicted_checked;
  j["predicted_fetched_blocks"] = r.predicted_asked;
  j["mispredicted_blocks"] = r.mispredicted;
  if (r.selected_blocks > 0) j["present_share"] = 1.0 - r.absent_at_deadline / r.selected_blocks;
  if (r.kv) j["duplicate_blocks"] = r.kv->duplicate_blocks();
  std::vector<double> gaps;
  for (std::size_t i = 1; i < r.tokens.size(); ++i) gaps.push_back((r.tokens[i] - r.tokens[i - 1]) * 1e3);
  j["token_gaps_ms"] = gaps;
  return j;
}

nlohmann::json Summarize(const SimResult& result, const Slo& slo) {
  std::vector<double> ttft, ttst, tbt, mean_tbt, e2e, exact, over_full, present;
  std::array<double, static_cast<int>(Path::kCount)> bytes{};
  double cancelled = 0;
  int completed = 0, meeting = 0;
  Seconds first_arrival = result.requests.empty() ? 0 : result.requests.front()->arrival;
  for (const auto& rp : result.requests) {
    const SimRequest& r = *rp;
    first_arrival = std::min(first_arrival, r.arrival);
    if (!r.finished()) continue;
    ++completed;
    meeting += MeetsSlo(r, slo) ? 1 : 0;
    ttft.push_back((r.tokens[0] - r.arrival) * 1e3);
    if (r.tokens.size() >= 2) ttst.push_back((r.tokens[1] - r.tokens[0]) * 1e3);
    for (std::size_t i = 2; i < r.tokens.size(); ++i) tbt.push_back((r.tokens[i] - r.tokens[i - 1]) * 1e3);
    if (r.tokens.size() >= 3) mean_tbt.push_back(MeanTbtMs(r));
    e2e.push_back((r.done - r.arrival) * 1e3);
    if (r.exact >= 0) exact.push_back((r.exact - r.arrival) * 1e3);
    double total = 0;
    for (int p = 0; p < static_cast<int>(Path::kCount); ++p) {
      bytes[p] += r.bytes[p];
      total += r.bytes[p];
    }
    if (r.full_kv_bytes > 0 && r.mode != Mode::kColocated) over_full.push_back(total / r.full_kv_bytes);
    if (r.selected_blocks > 0) present.push_back(1.0 - r.absent_at_deadline / r.selected_blocks);
    cancelled += r.cancelled_bytes;
  }
  const Seconds span = std::max(1e-9, result.horizon - first_arrival);
  nlohmann::json j;
  j["requests"] = result.requests.size();
  j["completed"] = completed;
  j["sim_seconds"] = result.horizon;
  j["events"] = result.events;
  j["ttft_ms"] = Distribution(ttft);
  j["ttst_ms"] = Distribution(ttst);
  j["tbt_ms"] = Distribution(tbt);
  j["mean_tbt_ms"] = Distribution(mean_tbt);
  j["e2e_ms"] = Distribution(e2e);
  j["time_to_exact_ms"] = Distribution(exact);
  j["exact_requests"] = exact.size();
  j["bytes_over_full"] = Distribution(over_full);
  if (!present.empty()) j["present_share"] = Distribution(present);
  nlohmann::json by_path = nlohmann::json::object();
  for (int p = 0; p < static_cast<int>(Path::kCount); ++p) {
    if (bytes[p] > 0) by_path[std::string(PathName(static_cast<Path>(p)))] = bytes[p];
  }
  j["bytes_by_path"] = by_path;
  j["cancelled_bytes"] = cancelled;  // SmartGen pushes and stream bytes that never crossed
  nlohmann::json links = nlohmann::json::array();
  for (const LinkStats& l : result.links) {
    nlohmann::json lb = nlohmann::json::object();
    double total = 0;
    for (int p = 0; p < static_cast<int>(Path::kCount); ++p) {
      if (l.bytes[p] > 0) lb[std::string(PathName(static_cast<Path>(p)))] = l.bytes[p];
      total += l.bytes[p];
    }
    links.push_back({{"name", l.name}, {"gbps", l.gbps}, {"bytes", total}, {"bytes_by_path", lb},
                     {"utilisation", l.busy_s / span}});
  }
  j["links"] = links;
  j["slo"] = {{"ttft_ms", slo.ttft_ms}, {"ttst_ms", slo.ttst_ms}, {"mean_tbt_ms", slo.mean_tbt_ms}};
  j["goodput"] = {{"requests_meeting_slo", meeting},
                  {"share", result.requests.empty() ? 0.0 : static_cast<double>(meeting) / result.requests.size()},
                  {"requests_per_s", meeting / span},
                  {"throughput_requests_per_s", completed / span}};
  return j;
}

}  // namespace smartgen::sim
