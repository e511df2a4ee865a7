// ServerMetrics: what the HTTP server measures itself, registered in a core::MetricsRegistry.
//
//   smartgen_server_requests_total{endpoint, outcome}   finished completion requests; outcome
//       ok, invalid_request, unauthorized, not_found, too_large, rate_limited, cancelled
//       (client went away), unavailable, timeout, error
//   smartgen_server_requests_in_flight                  generations running now
//   smartgen_server_prompt_tokens_total                 prompt tokens of admitted requests
//   smartgen_server_generation_tokens_total             tokens delivered to clients
//   smartgen_server_ttft_seconds                        request arrival -> first token emitted
//   smartgen_server_ttst_seconds                        first -> second token emitted
//   smartgen_server_tbt_seconds                         gaps between later tokens
//   smartgen_server_e2e_seconds                         arrival -> last byte, successful requests
//
// Times are taken when the server emits each token (to the socket when streaming), so they
// include everything the backend and the server do. Thread-safe.
#pragma once

#include <string_view>

#include "core/metrics.h"
#include "server/openai_request.h"

namespace smartgen::server {

// The `outcome` label for an HTTP status (499 = client closed the request).
std::string_view OutcomeForHttpStatus(int http_status);

class ServerMetrics {
 public:
  // `registry` outlives this object.
  explicit ServerMetrics(core::MetricsRegistry* registry);

  void CountRequest(Endpoint endpoint, int http_status);

  core::Gauge& in_flight;
  core::Counter& prompt_tokens;
  core::Counter& generation_tokens;
  core::Histogram& ttft;
  core::Histogram& ttst;
  core::Histogram& tbt;
  core::Histogram& e2e;

 private:
  core::MetricsRegistry* registry_;
};

}  // namespace smartgen::server
