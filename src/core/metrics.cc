#include "core/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace smartgen::core {
namespace {

enum MetricType : int { kCounter = 0, kGauge = 1, kHistogram = 2 };

constexpr std::string_view kTypeNames[] = {"counter", "gauge", "histogram"};

[[noreturn]] void MisuseAbort(const std::string& message) {
  std::fprintf(stderr, "smartgen: metrics misuse: %s\n", message.c_str());
  std::abort();
}

bool IsNameChar(char c, bool first, bool colon) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
  if (colon && c == ':') return true;
  return !first && c >= '0' && c <= '9';
}

void AppendEscaped(std::string* out, std::string_view text, bool quote) {
  for (char c : text) {
    if (c == '\\') {
      *out += "\\\\";
    } else if (c == '\n') {
      *out += "\\n";
    } else if (quote && c == '"') {
      *out += "\\\"";
    } else {
      out->push_back(c);
    }
  }
}

// `a="x",b="y"` (no braces); also the key of a series within its family.
std::string LabelText(const MetricLabels& labels) {
  std::string text;
  for (const auto& [name, value] : labels) {
    if (!text.empty()) text.push_back(',');
    text += name;
    text += "=\"";
    AppendEscaped(&text, value, /*quote=*/true);
    text.push_back('"');
  }
  return text;
}

void AppendSampleWithLabelText(std::string* out, std::string_view name, std::string_view label_text,
                               double value) {
  *out += name;
  if (!label_text.empty()) {
    out->push_back('{');
    *out += label_text;
    out->push_back('}');
  }
  out->push_back(' ');
  *out += FormatMetricValue(value);
  out->push_back('\n');
}

void CheckLabels(std::string_view metric, const MetricLabels& labels, bool histogram) {
  for (const auto& [name, value] : labels) {
    if (!IsValidLabelName(name) || name.starts_with("__") || (histogram && name == "le")) {
      MisuseAbort(fmt::format("metric '{}': invalid label name '{}'", metric, name));
    }
  }
}

}  // namespace

void Counter::Increment(double delta) {
  if (!(delta >= 0)) return;  // also rejects NaN
  value_.fetch_add(delta, std::memory_order_relaxed);
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    if (!std::isfinite(bounds_[i]) || (i > 0 && !(bounds_[i] > bounds_[i - 1]))) {
      MisuseAbort("histogram bounds must be finite and strictly increasing");
    }
  }
}

void Histogram::Observe(double value) {
  if (std::isnan(value)) return;
  const std::size_t bucket =
      std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.upper_bounds = bounds_;
  s.cumulative.resize(counts_.size());
  std::lock_guard<std::mutex> lock(mu_);
  std::uint64_t running = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    running += counts_[i];
    s.cumulative[i] = running;
  }
  s.sum = sum_;
  s.count = count_;
  return s;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  if (!(start > 0) || !(factor > 1) || count < 1) MisuseAbort("bad exponential buckets");
  std::vector<double> bounds;
  double bound = start;
  for (int i = 0; i < count; ++i, bound *= factor) bounds.push_back(bound);
  return bounds;
}

std::vector<double> LinearBuckets(double start, double width, int count) {
  if (!(width > 0) || count < 1) MisuseAbort("bad linear buckets");
  std::vector<double> bounds;
  for (int i = 0; i < count; ++i) bounds.push_back(start + width * i);
  return bounds;
}

std::vector<double> LatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,  0.25,
          0.5,   1.0,    2.5,   5.0,  10.0,  20.0, 30.0, 60.0};
}

// A family: one name, one type, its series keyed by label text.
struct MetricsRegistry::Family {
  std::string name;
  std::string help;
  int type = kCounter;
  std::vector<double> bounds;  // histograms
  std::map<std::string, std::unique_ptr<Counter>> counters;
  std::map<std::string, std::unique_ptr<Gauge>> gauges;
  std::map<std::string, std::unique_ptr<Histogram>> histograms;
};

MetricsRegistry::MetricsRegistry() = default;
MetricsRegistry::~MetricsRegistry() = default;

MetricsRegistry::Family& MetricsRegistry::GetFamily(std::string_view name, std::string_view help,
                                                    int type, std::span<const double> bounds) {
  if (!IsValidMetricName(name)) MisuseAbort(fmt::format("invalid metric name '{}'", name));
  auto it = families_.find(name);
  if (it == families_.end()) {
    auto family = std::make_unique<Family>();
    family->name = std::string(name);
    family->help = std::string(help);
    family->type = type;
    family->bounds.assign(bounds.begin(), bounds.end());
    it = families_.emplace(family->name, std::move(family)).first;
  }
  Family& family = *it->second;
  if (family.type != type) {
    MisuseAbort(fmt::format("metric '{}' is a {}, not a {}", name, kTypeNames[family.type],
                            kTypeNames[type]));
  }
  if (type == kHistogram &&
      !std::equal(bounds.begin(), bounds.end(), family.bounds.begin(), family.bounds.end())) {
    MisuseAbort(fmt::format("histogram '{}' requested with another bucket layout", name));
  }
  return family;
}

Counter& MetricsRegistry::GetCounter(std::string_view name, std::string_view help,
                                     const MetricLabels& labels) {
  CheckLabels(name, labels, false);
  std::lock_guard<std::mutex> lock(mu_);
  Family& family = GetFamily(name, help, kCounter, {});
  auto& slot = family.counters[LabelText(labels)];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Gauge& MetricsRegistry::GetGauge(std::string_view name, std::string_view help,
                                 const MetricLabels& labels) {
  CheckLabels(name, labels, false);
  std::lock_guard<std::mutex> lock(mu_);
  Family& family = GetFamily(name, help, kGauge, {});
  auto& slot = family.gauges[LabelText(labels)];
  if (!slot) slot = std::make_unique<Gauge>();
  return *slot;
}

Histogram& MetricsRegistry::GetHistogram(std::string_view name, std::string_view help,
                                         std::span<const double> upper_bounds,
                                         const MetricLabels& labels) {
  CheckLabels(name, labels, true);
  std::lock_guard<std::mutex> lock(mu_);
  Family& family = GetFamily(name, help, kHistogram, upper_bounds);
  auto& slot = family.histograms[LabelText(labels)];
  if (!slot) {
    slot =
        std::make_unique<Histogram>(std::vector<double>(upper_bounds.begin(), upper_bounds.end()));
  }
  return *slot;
}

void MetricsRegistry::AppendText(std::string* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, family] : families_) {
    AppendMetricHeader(out, name, family->help, kTypeNames[family->type]);
    for (const auto& [labels, counter] : family->counters) {
      AppendSampleWithLabelText(out, name, labels, counter->value());
    }
    for (const auto& [labels, gauge] : family->gauges) {
      AppendSampleWithLabelText(out, name, labels, gauge->value());
    }
    for (const auto& [labels, histogram] : family->histograms) {
      const Histogram::Snapshot s = histogram->snapshot();
      const std::string bucket_name = name + "_bucket";
      const std::string prefix = labels.empty() ? std::string() : labels + ",";
      for (std::size_t i = 0; i < s.cumulative.size(); ++i) {
        const double le = i < s.upper_bounds.size() ? s.upper_bounds[i] : INFINITY;
        AppendSampleWithLabelText(out, bucket_name, prefix + "le=\"" + FormatMetricValue(le) + "\"",
                                  static_cast<double>(s.cumulative[i]));
      }
      AppendSampleWithLabelText(out, name + "_sum", labels, s.sum);
      AppendSampleWithLabelText(out, name + "_count", labels, static_cast<double>(s.count));
    }
  }
}

std::string MetricsRegistry::Text() const {
  std::string out;
  AppendText(&out);
  return out;
}

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i], i == 0, /*colon=*/true)) return false;
  }
  return true;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i], i == 0, /*colon=*/false)) return false;
  }
  return true;
}

std::string FormatMetricValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

void AppendMetricHeader(std::string* out, std::string_view name, std::string_view help,
                        std::string_view type) {
  *out += "# HELP ";
  *out += name;
  out->push_back(' ');
  AppendEscaped(out, help, /*quote=*/false);
  *out += "\n# TYPE ";
  *out += name;
  out->push_back(' ');
  *out += type;
  out->push_back('\n');
}

void AppendMetricSample(std::string* out, std::string_view name, const MetricLabels& labels,
                        double value) {
  AppendSampleWithLabelText(out, name, LabelText(labels), value);
}

}  // namespace smartgen::core
