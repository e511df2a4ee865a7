#include "core/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

namespace smartgen::core {
namespace {

TEST(Metrics, CounterOnlyGoesUp) {
  Counter c;
  c.Increment();
  c.Increment(2.5);
  c.Increment(-1);
  c.Increment(NAN);
  EXPECT_DOUBLE_EQ(c.value(), 3.5);
}

TEST(Metrics, GaugeGoesBothWays) {
  Gauge g;
  g.Increment();
  g.Increment();
  g.Decrement();
  g.Add(0.5);
  EXPECT_DOUBLE_EQ(g.value(), 1.5);
  g.Set(-3);
  EXPECT_DOUBLE_EQ(g.value(), -3);
}

TEST(Metrics, HistogramBucketsAreCumulativeAndBoundsInclusive) {
  Histogram h({1.0, 2.0, 5.0});
  for (double v : {0.5, 1.0, 1.5, 2.0, 4.0, 9.0, std::nan("")}) h.Observe(v);
  const Histogram::Snapshot s = h.snapshot();
  EXPECT_EQ(s.cumulative, (std::vector<std::uint64_t>{2, 4, 5, 6}));
  EXPECT_EQ(s.count, 6u);
  EXPECT_DOUBLE_EQ(s.sum, 18.0);
}

TEST(Metrics, BucketHelpers) {
  EXPECT_EQ(ExponentialBuckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
  EXPECT_EQ(LinearBuckets(0, 5, 3), (std::vector<double>{0, 5, 10}));
  const std::vector<double> latency = LatencyBuckets();
  EXPECT_TRUE(std::is_sorted(latency.begin(), latency.end()));
  EXPECT_DOUBLE_EQ(latency.front(), 0.001);
}

TEST(Metrics, SameNameAndLabelsGiveTheSameObject) {
  MetricsRegistry r;
  Counter& a = r.GetCounter("x_total", "help", {{"k", "1"}});
  Counter& b = r.GetCounter("x_total", "other help", {{"k", "1"}});
  Counter& c = r.GetCounter("x_total", "help", {{"k", "2"}});
  EXPECT_EQ(&a, &b);
  EXPECT_NE(&a, &c);
}

TEST(Metrics, TextExpositionFormat) {
  MetricsRegistry r;
  r.GetCounter("req_total", "Requests.\nBy outcome", {{"outcome", "ok"}}).Increment(3);
  r.GetCounter("req_total", "", {{"outcome", "a\"b\\c\nd"}}).Increment();
  r.GetGauge("in_flight", "In flight").Set(2);
  Histogram& h =
      r.GetHistogram("lat_seconds", "Latency", std::vector<double>{0.1, 1}, {{"route", "x"}});
  h.Observe(0.0625);
  h.Observe(0.5);
  h.Observe(3);
  const std::string expected =
      "# HELP in_flight In flight\n"
      "# TYPE in_flight gauge\n"
      "in_flight 2\n"
      "# HELP lat_seconds Latency\n"
      "# TYPE lat_seconds histogram\n"
      "lat_seconds_bucket{route=\"x\",le=\"0.1\"} 1\n"
      "lat_seconds_bucket{route=\"x\",le=\"1\"} 2\n"
      "lat_seconds_bucket{route=\"x\",le=\"+Inf\"} 3\n"
      "lat_seconds_sum{route=\"x\"} 3.5625\n"
      "lat_seconds_count{route=\"x\"} 3\n"
      "# HELP req_total Requests.\\nBy outcome\n"
      "# TYPE req_total counter\n"
      "req_total{outcome=\"a\\\"b\\\\c\\nd\"} 1\n"
      "req_total{outcome=\"ok\"} 3\n";
  EXPECT_EQ(r.Text(), expected);
}

TEST(Metrics, UnlabelledHistogramAndSpecialValues) {
  MetricsRegistry r;
  r.GetHistogram("h", "", std::vector<double>{1}).Observe(2);
  const std::string text = r.Text();
  EXPECT_NE(text.find("h_bucket{le=\"1\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("h_bucket{le=\"+Inf\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("h_count 1\n"), std::string::npos);
  EXPECT_EQ(FormatMetricValue(INFINITY), "+Inf");
  EXPECT_EQ(FormatMetricValue(-INFINITY), "-Inf");
  EXPECT_EQ(FormatMetricValue(NAN), "NaN");
  EXPECT_EQ(FormatMetricValue(0.25), "0.25");
  EXPECT_EQ(FormatMetricValue(1e6), "1000000");
}

TEST(Metrics, CollectorHelpers) {
  std::string out;
  AppendMetricHeader(&out, "bytes_total", "Bytes", "counter");
  AppendMetricSample(&out, "bytes_total", {{"path", "on_demand"}}, 4096);
  AppendMetricSample(&out, "bytes_total", {}, 1);
  EXPECT_EQ(out,
            "# HELP bytes_total Bytes\n# TYPE bytes_total counter\n"
            "bytes_total{path=\"on_demand\"} 4096\nbytes_total 1\n");
}

TEST(Metrics, NameValidation) {
  EXPECT_TRUE(IsValidMetricName("smartgen:ttft_seconds"));
  EXPECT_FALSE(IsValidMetricName("1abc"));
  EXPECT_FALSE(IsValidMetricName("a-b"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_TRUE(IsValidLabelName("_route2"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
}

TEST(MetricsDeathTest, TypeConflictAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        MetricsRegistry r;
        r.GetCounter("m", "");
        r.GetGauge("m", "");
      },
      "is a counter, not a gauge");
  EXPECT_DEATH(
      {
        MetricsRegistry r;
        r.GetHistogram("h", "", std::vector<double>{1});
        r.GetHistogram("h", "", std::vector<double>{2});
      },
      "another bucket layout");
  EXPECT_DEATH({ Histogram h({2, 1}); }, "strictly increasing");
}

TEST(Metrics, ConcurrentUpdatesAreExact) {
  MetricsRegistry r;
  constexpr int kThreads = 4, kIters = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&r, t] {
      Counter& c = r.GetCounter("c_total", "");
      Gauge& g = r.GetGauge("g", "", {{"t", std::to_string(t % 2)}});
      Histogram& h = r.GetHistogram("h", "", LatencyBuckets());
      for (int i = 0; i < kIters; ++i) {
        c.Increment();
        g.Increment();
        h.Observe(0.002);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_DOUBLE_EQ(r.GetCounter("c_total", "").value(), kThreads * kIters);
  EXPECT_DOUBLE_EQ(r.GetGauge("g", "", {{"t", "0"}}).value(), 2 * kIters);
  const Histogram::Snapshot s = r.GetHistogram("h", "", LatencyBuckets()).snapshot();
  EXPECT_EQ(s.count, static_cast<std::uint64_t>(kThreads * kIters));
  EXPECT_EQ(s.cumulative[0], 0u);
  EXPECT_EQ(s.cumulative[1], s.count);
}

}  // namespace
}  // namespace smartgen::core
