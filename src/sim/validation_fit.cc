#include "sim/validation_fit.h"

#include <algorithm>
#include <optional>
#include <set>

namespace smartgen::sim::internal {
namespace {

double MedianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Line {
  double slope = 0, intercept = 0;
};

// The least-squares line through `points` (x, y); nullopt when the x do not vary.
std::optional<Line> FitLine(const std::vector<std::pair<double, double>>& points) {
  if (points.empty()) return std::nullopt;
  double mx = 0, my = 0;
  for (const auto& [x, y] : points) {
    mx += x;
    my += y;
  }
  mx /= static_cast<double>(points.size());
  my /= static_cast<double>(points.size());
  double sxy = 0, sxx = 0;
  for (const auto& [x, y] : points) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) * (x - mx);
  }
  if (sxx <= 0) return std::nullopt;
  return Line{sxy / sxx, my - sxy / sxx * mx};
}

}  // namespace

double FitAttentionRate(
    const std::map<std::pair<std::int64_t, double>, const MeasuredRecord*>& colocated,
    const ModelShape& shape) {
  std::vector<std::pair<double, double>> points;  // (context, step s)
  std::set<std::int64_t> lengths;
  for (const auto& [key, r] : colocated) {
    const double ms = r->median_gap_ms > 0 ? r->median_gap_ms : r->mean_tbt_ms;
    if (ms <= 0) continue;
    points.emplace_back(static_cast<double>(r->prompt_tokens + r->output_tokens / 2), ms / 1e3);
    lengths.insert(r->prompt_tokens);
  }
  if (lengths.size() < 2) return 0;
  const std::optional<Line> line = FitLine(points);
  const double slope = line.has_value() ? line->slope : 0;  // s per key of context, all layers
  if (slope <= 0) return 0;
  return shape.KvBytesPerTokenLayer() * shape.n_layers / slope;
}

double FitFirstTouchRate(const std::vector<const MeasuredRecord*>& colocated, const ModelShape& shape) {
  double bytes = 0, excess_s = 0;
  int n = 0;
  for (const MeasuredRecord* r : colocated) {
    if (r->median_gap_ms <= 0 || r->ttst_ms <= 0) continue;
    bytes += shape.KvBytes(r->prompt_tokens);
    excess_s += (r->ttst_ms - r->median_gap_ms) / 1e3;
    ++n;
  }
  if (n == 0) return -1;
  return excess_s > 0 ? bytes / excess_s : 0.0;
}

double FitColdReadRate(const std::vector<MeasuredRecord>& records, const CostModel& cost) {
  // The median record's excess: the check compares each point's median request, and a few
  // first steps that met a hiccup of the VM (100 ms and more) would set a mean.
  std::vector<double> excess_s;
  for (const MeasuredRecord& r : records) {
    if ((r.mode != Mode::kFull && r.mode != Mode::kLayerwise) || r.first_step_excess_ms < 0) continue;
    const double kv = r.kv_bytes > 0 ? r.kv_bytes : cost.shape().KvBytes(r.prompt_tokens);
    excess_s.push_back(r.first_step_excess_ms / 1e3 - cost.FirstTouch(kv));
  }
  if (excess_s.empty()) return -1;
  const double median = MedianOf(std::move(excess_s));
  return median > 0 ? cost.shape().WeightBytes() / median : 0.0;
}

std::optional<LocalAttentionFit> FitLocalAttention(const std::vector<MeasuredRecord>& records,
                                                   const ModelShape& shape, int block_tokens) {
  const double block_bytes = shape.KvBytesPerTokenLayer() / shape.n_kv_heads * block_tokens;
  std::vector<std::pair<double, double>> points;  // (bytes, s) of a record's mean step
  for (const MeasuredRecord& r : records) {
    if (r.mode != Mode::kSmartgen || r.selective_steps < 2 || r.local_attended_blocks <= 0) continue;
    const double steps = r.selective_steps - 1;
    points.emplace_back(r.local_attended_blocks * block_bytes / steps, r.local_attention_ms / 1e3 / steps);
  }
  if (points.size() < 2) return std::nullopt;
  const std::optional<Line> line = FitLine(points);
  if (!line.has_value() || line->slope <= 0) return std::nullopt;
  if (line->intercept >= 0) return LocalAttentionFit{1.0 / line->slope, line->intercept / shape.n_layers};
  double x2 = 0, xy = 0;  // through the origin
  for (const auto& [x, y] : points) {
    x2 += x * x;
    xy += x * y;
  }
  return LocalAttentionFit{x2 / xy, 0.0};
}

std::optional<SelectiveCostFit> FitSelectiveCosts(
    const std::vector<MeasuredRecord>& records,
    const std::map<std::tuple<std::int64_t, double, int>, const MeasuredRecord*>& colocated_rep,
    const CostModel& cost, bool fit_landing) {
  const ModelShape& shape = cost.shape();
  // Per point (prompt, R): each record's step residual and the bytes landing during the step.
  std::map<std::pair<std::int64_t, double>, std::pair<std::vector<double>, std::vector<double>>> by_point;
  for (const MeasuredRecord& r : records) {
    if (r.mode != Mode::kSmartgen || r.selective_steps < 2 ||
        r.selective_layer_steps < r.selective_steps * shape.n_layers) {
      continue;
    }
    const auto coloc = colocated_rep.find({r.prompt_tokens, r.ratio, r.rep});
    if (coloc == colocated_rep.end() || coloc->second->median_gap_ms <= 0) continue;
    const std::int64_t context = r.prompt_tokens + r.output_tokens / 2;
    Seconds attention = 0;
    for (int l = 0; l < shape.n_layers; ++l) {
      attention += cost.DecodeAttention(static_cast<double>(shape.LayerKvTokens(l, context)));
    }
    const Seconds dense_rest = coloc->second->median_gap_ms / 1e3 - attention;
    const Seconds own = r.selective_own_ms / 1e3;
    const double link = r.link_mbps * 1e6 / 8;
    double rate = link;  // older records: the link's rate
    const double end_ms = r.time_to_exact_ms >= 0 ? r.time_to_exact_ms : r.e2e_ms;
    if (r.decode_landed_bytes >= 0 && end_ms > r.ttft_ms) {
      rate = std::min(link, r.decode_landed_bytes / ((end_ms - r.ttft_ms) / 1e3));
    }
    auto& [residual, landing] = by_point[{r.prompt_tokens, r.ratio}];
    residual.push_back(own - r.selective_parts_ms / 1e3 - dense_rest);
    landing.push_back(rate * own);
  }
  if (by_point.empty()) return std::nullopt;
  // y = layers x c + bytes x k over the points' medians; sums of the normal equations.
  const double layers = shape.n_layers;
  double sxx = 0, sxy = 0, sx = 0, sy = 0, n = 0;
  for (auto& [key, point] : by_point) {
    const double y = MedianOf(std::move(point.first)), x = MedianOf(std::move(point.second));
    sxx += x * x;
    sxy += x * y;
    sx += x;
    sy += y;
    n += 1;
  }
  SelectiveCostFit fit{sy / n / layers, cost.hardware().transfer_cpu_s_per_byte};
  const double det = n * sxx - sx * sx;
  if (!fit_landing || n < 2 || det <= 1e-12 * n * sxx) {  // c alone
    fit.layer_s = std::max(0.0, (sy - fit.transfer_cpu_s_per_byte * sx) / n / layers);
    return fit;
  }
  fit.transfer_cpu_s_per_byte = (n * sxy - sx * sy) / det;
  fit.layer_s = (sy - fit.transfer_cpu_s_per_byte * sx) / n / layers;
  if (fit.transfer_cpu_s_per_byte < 0) {
    fit = {std::max(0.0, sy / n / layers), 0.0};
  } else if (fit.layer_s < 0) {
    fit = {0.0, sxx > 0 ? std::max(0.0, sxy / sxx) : 0.0};
  }
  return fit;
}

std::optional<double> FitFirstSelectExtra(const std::vector<MeasuredRecord>& records, const ModelShape& shape) {
  std::vector<double> ratios;
  for (const MeasuredRecord& r : records) {
    if (r.mode != Mode::kSmartgen || !r.first_select_ratio.has_value() || r.selective_steps < 3 ||
        r.selective_layer_steps < r.selective_steps * shape.n_layers) {
      continue;
    }
    ratios.push_back(*r.first_select_ratio);
  }
  if (ratios.empty()) return std::nullopt;
  return MedianOf(std::move(ratios)) - 1;
}

}  // namespace smartgen::sim::internal
