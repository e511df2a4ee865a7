// Metrics: a small Prometheus-style registry (counters, gauges, fixed-bucket histograms, with
// optional labels) and its text exposition format (version 0.0.4), for `/metrics`.
//
//   core::MetricsRegistry registry;
//   core::Counter& ok = registry.GetCounter("smartgen_server_requests_total",
//                                           "Requests by outcome", {{"outcome", "ok"}});
//   core::Histogram& ttft = registry.GetHistogram("smartgen_server_ttft_seconds",
//                                                 "Time to first token", LatencyBuckets());
//   ok.Increment();
//   ttft.Observe(0.123);
//   std::string text = registry.Text();
//
// A metric is identified by its name and its label set (in the order given). Asking again for
// the same name and labels returns the same object; the objects live as long as the registry
// and never move, so look a metric up once and keep the reference on hot paths. One name is one
// type (and, for a histogram, one bucket layout); asking for a name with another type or layout,
// or an invalid metric or label name, is a programmer error and aborts with a message.
// Follow Prometheus conventions: base units (seconds, bytes) in the name, counters end in
// `_total`.
//
// Code that keeps its own counters (e.g. a snapshot struct) can export them at scrape time with
// AppendMetricHeader / AppendMetricSample instead of mirroring them into a registry.
//
// Thread-safety: everything here is thread-safe. Counter and Gauge updates are lock-free
// atomics; a Histogram takes a short lock per observation so that its count, sum and buckets
// always agree in a scrape.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace smartgen::core {

// Label name/value pairs, e.g. {{"route", "completions"}, {"outcome", "ok"}}.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// A value that only goes up (requests served, bytes sent).
class Counter {
 public:
  // Adds `delta` (>= 0; negative or NaN deltas are ignored: a counter never goes down).
  void Increment(double delta = 1.0);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// A value that goes up and down (requests in flight, queue depth).
class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Add(double delta) { value_.fetch_add(delta, std::memory_order_relaxed); }
  void Increment() { Add(1.0); }
  void Decrement() { Add(-1.0); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Observations counted into fixed buckets (cumulative `le` buckets on export, +Inf implicit).
class Histogram {
 public:
  struct Snapshot {
    std::vector<double> upper_bounds;       // as constructed, without +Inf
    std::vector<std::uint64_t> cumulative;  // [upper_bounds.size() + 1]; last = count
    double sum = 0;
    std::uint64_t count = 0;
  };

  // `upper_bounds` strictly increasing and finite (checked: aborts otherwise).
  explicit Histogram(std::vector<double> upper_bounds);

  // Counts `value` in the first bucket whose bound is >= value (NaN is ignored).
  void Observe(double value);
  Snapshot snapshot() const;
  const std::vector<double>& upper_bounds() const { return bounds_; }

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<std::uint64_t> counts_;  // per bucket (not cumulative), +Inf last
  double sum_ = 0;
  std::uint64_t count_ = 0;
};

// `count` bounds start, start*factor, ... (start > 0, factor > 1).
std::vector<double> ExponentialBuckets(double start, double factor, int count);
// `count` bounds start, start+width, ... (width > 0).
std::vector<double> LinearBuckets(double start, double width, int count);
// Latency buckets in seconds, 1 ms to 60 s, roughly x2 apart: for TTFT, TTST, TBT, e2e.
std::vector<double> LatencyBuckets();

class MetricsRegistry {
 public:
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // The metric `name` with `labels`, created on first use. `help` is kept from the first call.
  Counter& GetCounter(std::string_view name, std::string_view help,
                      const MetricLabels& labels = {});
  Gauge& GetGauge(std::string_view name, std::string_view help, const MetricLabels& labels = {});
  Histogram& GetHistogram(std::string_view name, std::string_view help,
                          std::span<const double> upper_bounds, const MetricLabels& labels = {});

  // Appends every metric in the text exposition format: families sorted by name, each with
  // `# HELP` and `# TYPE` lines, its series sorted by label text.
  void AppendText(std::string* out) const;
  std::string Text() const;

 private:
  struct Family;
  Family& GetFamily(std::string_view name, std::string_view help, int type,
                    std::span<const double> bounds);

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Family>, std::less<>> families_;
};

// Exposition helpers (also used by the registry).
// Metric names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*.
bool IsValidMetricName(std::string_view name);
bool IsValidLabelName(std::string_view name);
// A sample value: shortest round-trip decimal, "+Inf", "-Inf" or "NaN".
std::string FormatMetricValue(double value);
// "# HELP <name> <help>\n# TYPE <name> <type>\n"; type is counter, gauge, histogram or untyped.
void AppendMetricHeader(std::string* out, std::string_view name, std::string_view help,
                        std::string_view type);
// "<name>{<labels>} <value>\n" with label values escaped (\\, \", \n).
void AppendMetricSample(std::string* out, std::string_view name, const MetricLabels& labels,
                        double value);

}  // namespace smartgen::core
