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

std::vector<double> TokenCountBuckets() {
  std::vector<double> b;
  for (double decade = 1; decade <= 1e6; decade *= 10) {
    for (double step : {1.0, 2.0, 5.0}) {
      if (decade * step <= 1e6) b.push_back(decade * step);
    }
  }
  return b;
}

ServerMetrics::ServerMetrics(core::MetricsRegistry* r, std::string model_name)
    : registry_(r),
      labels_{{"model_name", std::move(model_name)}},
      in_flight(r->GetGauge("smartgen_server_requests_in_flight",
                            "Completion requests generating now", labels_)),
      queued(r->GetGauge("smartgen_server_requests_queued",
                         "Requests waiting for a generation slot now", labels_)),
      queue_seconds(r->GetHistogram("smartgen_server_queue_seconds",
                                    "Time admitted requests waited for a slot",
                                    core::LatencyBuckets(), labels_)),
      prompt_tokens(r->GetCounter("smartgen_server_prompt_tokens_total",
                                  "Prompt tokens of admitted completion requests", labels_)),
      generation_tokens(r->GetCounter("smartgen_server_generation_tokens_total",
                                      "Generated tokens delivered to clients", labels_)),
      request_prompt_tokens(r->GetHistogram("smartgen_server_request_prompt_tokens",
                                            "Prompt length of admitted requests, in tokens",
                                            TokenCountBuckets(), labels_)),
      request_generation_tokens(
          r->GetHistogram("smartgen_server_request_generation_tokens",
                          "Tokens generated per successful request (all choices)",
                          TokenCountBuckets(), labels_)),
      ttft(r->GetHistogram("smartgen_server_ttft_seconds",
                           "Request arrival to first token emitted by the server",
                           core::LatencyBuckets(), labels_)),
      ttst(r->GetHistogram("smartgen_server_ttst_seconds",
                           "First to second token emitted by the server", core::LatencyBuckets(),
                           labels_)),
      tbt(r->GetHistogram("smartgen_server_tbt_seconds",
                          "Time between later tokens emitted by the server",
                          core::LatencyBuckets(), labels_)),
      e2e(r->GetHistogram("smartgen_server_e2e_seconds",
                          "Request arrival to end of response, successful requests",
                          core::LatencyBuckets(), labels_)) {}

void ServerMetrics::CountRequest(Endpoint endpoint, int http_status) {
  core::MetricLabels labels = labels_;
  labels.emplace_back("endpoint", std::string(EndpointName(endpoint)));
  labels.emplace_back("outcome", std::string(OutcomeForHttpStatus(http_status)));
  registry_->GetCounter("smartgen_server_requests_total", "Finished completion requests by outcome",
                        labels)
      .Increment();
}

void ServerMetrics::CountFinish(std::string_view finish_reason) {
  core::MetricLabels labels = labels_;
  labels.emplace_back("finish_reason", std::string(finish_reason));
  registry_
      ->GetCounter("smartgen_server_request_success_total",
                   "Choices of successful requests by finish reason", labels)
      .Increment();
}

}  // namespace smartgen::server
