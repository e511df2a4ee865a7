#include "server/server_metrics.h"

namespace smartgen::server {

std::string_view OutcomeForHttpStatus(int http_status) {
  switch (http_status) {
    case 200:
      return "ok";
    case 401:
      return "unauthorized";
    case 404:
      return "not_found";
    case 413:
      return "too_large";
    case 429:
      return "rate_limited";
    case 499:
      return "cancelled";
    case 503:
      return "unavailable";
    case 504:
      return "timeout";
    default:
      return http_status >= 500 ? "error" : "invalid_request";
  }
}

ServerMetrics::ServerMetrics(core::MetricsRegistry* r)
    : in_flight(
          r->GetGauge("smartgen_server_requests_in_flight", "Completion requests generating now")),
      prompt_tokens(r->GetCounter("smartgen_server_prompt_tokens_total",
                                  "Prompt tokens of admitted completion requests")),
      generation_tokens(r->GetCounter("smartgen_server_generation_tokens_total",
                                      "Generated tokens delivered to clients")),
      ttft(r->GetHistogram("smartgen_server_ttft_seconds",
                           "Request arrival to first token emitted by the server",
                           core::LatencyBuckets())),
      ttst(r->GetHistogram("smartgen_server_ttst_seconds",
                           "First to second token emitted by the server", core::LatencyBuckets())),
      tbt(r->GetHistogram("smartgen_server_tbt_seconds",
                          "Time between later tokens emitted by the server",
                          core::LatencyBuckets())),
      e2e(r->GetHistogram("smartgen_server_e2e_seconds",
                          "Request arrival to end of response, successful requests",
                          core::LatencyBuckets())),
      registry_(r) {}

void ServerMetrics::CountRequest(Endpoint endpoint, int http_status) {
  registry_
      ->GetCounter("smartgen_server_requests_total", "Finished completion requests by outcome",
                   {{"endpoint", std::string(EndpointName(endpoint))},
                    {"outcome", std::string(OutcomeForHttpStatus(http_status))}})
      .Increment();
}

}  // namespace smartgen::server
