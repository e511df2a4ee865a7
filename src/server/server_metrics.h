// ServerMetrics: what the HTTP server measures itself, registered in a core::MetricsRegistry.
// Every series carries a `model_name` label (the first served name), as vLLM's do, so that a
// Grafana board can select one deployment among several.
//
//   smartgen_server_requests_total{endpoint, outcome}   finished completion requests; outcome
//       ok, invalid_request, unauthorized, not_found, too_large, rate_limited, cancelled
//       (client went away), unavailable, timeout, error
//   smartgen_server_requests_in_flight                  generations running now
//   smartgen_server_requests_queued                     requests waiting for a generation slot
//   smartgen_server_queue_seconds                       time admitted requests waited for a slot
//   smartgen_server_prompt_tokens_total                 prompt tokens of admitted requests
//   smartgen_server_generation_tokens_total             tokens delivered to clients
//   smartgen_server_request_prompt_tokens               histogram: prompt length per request
//   smartgen_server_request_generation_tokens           histogram: tokens generated per request
//                                                       (all choices), successful requests
//   smartgen_server_request_success_total{finish_reason}  choices of successful requests by
//                                                       finish reason (stop, length)
//   smartgen_server_ttft_seconds                        request arrival -> first token emitted
//   smartgen_server_ttst_seconds                        first -> second token emitted
//   smartgen_server_tbt_seconds                         gaps between later tokens
//   smartgen_server_e2e_seconds                         arrival -> last byte, successful requests
//
// Times are taken when the server emits each token (to the socket when streaming), so they
// include everything the backend and the server do. Thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "core/metrics.h"
#include "server/openai_request.h"

namespace smartgen::server {

// The `outcome` label for an HTTP status (499 = client closed the request).
std::string_view OutcomeForHttpStatus(int http_status);

// Token-count buckets: 1, 2, 5, 10, 20, 50, ... 1e6 (1-2-5 steps).
std::vector<double> TokenCountBuckets();

class ServerMetrics {
 public:
  // `registry` outlives this object.
  ServerMetrics(core::MetricsRegistry* registry, std::string model_name);

  void CountRequest(Endpoint endpoint, int http_status);
  // One choice of a successful request ended with `finish_reason`.
  void CountFinish(std::string_view finish_reason);
  const core::MetricLabels& labels() const { return labels_; }

 private:
  core::MetricsRegistry* registry_;
  const core::MetricLabels labels_;  // {{"model_name", ...}}

 public:
  core::Gauge& in_flight;
  core::Gauge& queued;
  core::Histogram& queue_seconds;
  core::Counter& prompt_tokens;
  core::Counter& generation_tokens;
  core::Histogram& request_prompt_tokens;
  core::Histogram& request_generation_tokens;
  core::Histogram& ttft;
  core::Histogram& ttst;
  core::Histogram& tbt;
  core::Histogram& e2e;
};

}  // namespace smartgen::server
