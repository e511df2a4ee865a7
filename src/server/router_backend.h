// RouterBackend: serves a node::Router through the HTTP API (CompletionBackend).
// The router is the disaggregated deployment's front; this adapter maps request fields and
// the `smartgen` extension (mode, options, ignore_eos, forced_tokens) onto it.
#pragma once

#include <memory>

#include "node/router/router.h"
#include "server/completion_backend.h"

namespace smartgen::server {

class RouterBackend final : public CompletionBackend {
 public:
  explicit RouterBackend(std::unique_ptr<node::Router> router) : router_(std::move(router)) {}

  const tokenizer::Tokenizer& tokenizer() const override { return router_->model().tokenizer(); }
  std::string model_name() const override;
  std::int64_t context_length() const override { return router_->context_length(); }
  // The sampling fields travel to both nodes in node::GenerationSpec, and each token's
  // log-probabilities come back on the decode stream (token 1's from the prefill node over the
  // KV link); n > 1 choices are one routed request: one prefill, one KV transfer, and the
  // decode node forks the prompt's KV into each choice (node/decode/decode_node.h).
  BackendFeatures features() const override {
    return {.logprobs = true, .logit_processing = true, .ignore_eos = true, .choices = true};
  }
  Result<GenerationResult> Generate(const GenerationRequest& request,
                                            const TokenSink& on_token) override;
  Status Health() const override { return router_->Health(); }
  nlohmann::json HealthDetail() const override { return router_->HealthReport(); }
  void AppendMetrics(std::string* out) const override { router_->AppendMetrics(out); }

 private:
  std::unique_ptr<node::Router> router_;
};

}  // namespace smartgen::server
