// One request of `smartgen bench ttst` through a LocalCluster, and the figures of its record.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "tools/local_cluster.h"

namespace smartgen::tools {

struct BenchRequest {
  std::vector<std::int32_t> prompt;
  int max_tokens = 2;
  // A mode label: MODE[:VARIANT...], VARIANT nowindow (window_aware off) or int8 (int8_wire
  // on), so variants alternate with the plain modes in one run (ModeOfLabel).
  std::string mode;
  nlohmann::json options;              // mode options, or null
  std::vector<std::int32_t> forced;    // teacher forcing (node/common/generation_spec.h)
};

// The mode and options a label stands for.
Result<std::pair<std::string, nlohmann::json>> ModeOfLabel(const std::string& label,
                                                          const nlohmann::json& options);

struct TtstMeasured {
  nlohmann::json response_stats;       // the response's `smartgen` object
  std::vector<std::int32_t> tokens;    // as streamed
  std::vector<std::int32_t> argmax;    // teacher forcing: the decode node's own picks
};

// Greedy, end-of-generation ignored.
Result<TtstMeasured> SendBenchRequest(const LocalCluster& cluster, const BenchRequest& request);

// The record fields of one request: TTFT/TTST as the router hands tokens over, mean and p99
// TBT over tokens 2..n, e2e, bytes on the wire, each token's arrival, and SmartGen's figures.
nlohmann::json RequestFields(const nlohmann::json& stats);

// Every SmartGen option in effect for a request of mode `label` with `options` (defaults
// filled in, window_aware included), recorded with each measurement so a replay (smartgen
// simulate --validate) runs what ran even after a default changes.
Result<nlohmann::json> EffectiveOptions(const std::string& label, const nlohmann::json& options);

// A number at stats[a][b] (0 when absent).
double StatNumber(const nlohmann::json& stats, const char* a, const char* b = nullptr);

}  // namespace smartgen::tools
