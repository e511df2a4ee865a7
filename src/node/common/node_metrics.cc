#include "node/common/node_metrics.h"

#include "core/metrics.h"
#include "core/process_metrics.h"

namespace smartgen::node {

void AppendNodeMetrics(std::string* out, std::string_view prefix, std::string_view role,
                       std::string_view model_name, const kv::BlockPool& pool) {
  const core::MetricLabels labels = {{"model_name", std::string(model_name)}};
  const double used = static_cast<double>(pool.used());
  const double capacity = static_cast<double>(pool.capacity());
  const auto gauge = [&](const char* suffix, const char* help, double value,
                         const core::MetricLabels& with = {}) {
    const std::string name = std::string(prefix) + suffix;
    core::AppendMetricHeader(out, name, help, "gauge");
    core::AppendMetricSample(out, name, with, value);
  };
  // Unlabelled as it always was (tests and scripts read it by its bare name).
  gauge("_kv_blocks_used", "KV pool blocks in use", used);
  gauge("_kv_blocks_capacity", "KV pool blocks in all", capacity, labels);
  gauge("_kv_capacity_bytes", "KV pool size in bytes",
        capacity * static_cast<double>(pool.geometry().block_bytes()), labels);
  gauge("_kv_usage_ratio", "KV pool blocks in use over its capacity (0..1)",
        capacity > 0 ? used / capacity : 0.0, labels);
  core::AppendProcessMetrics(out, role);
}

}  // namespace smartgen::node
