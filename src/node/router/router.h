// Router: the front of a disaggregated deployment. It holds pools of prefill and decode nodes
// (any number of each, health-checked: node_pool.h), picks one of each per request (least
// loaded among those up), and streams the tokens from the decode node: token 1 comes from the
// prefill node over the KV link (PrefillDone) and the decode node forwards it at once, so every
// token reaches the router one way. The HTTP API (server layer) sits on top through an adapter.
//
// Per request: register at the decode node (POST /internal/decode, streamed), then prefill at
// the prefill node (POST /internal/prefill), which ships the KV straight to that decode node.
// Tokens are delivered in order exactly once (ordered_delivery.h), whichever node and whichever
// attempt produced them. Failures, each bounded by a deadline rather than the request's:
//   - no prefill node up: the request runs colocated on a decode node (stats say why);
//   - prefill node failing, or aborted because its health checks failed: the decode node is
//     told to compute the prompt itself (/internal/fallback);
//   - decode node refusing or unreachable before it accepted the request: the request goes to
//     the next decode node that is up (at most max_attempts nodes);
//   - decode node dead or silent mid-stream (no line within stream_idle_timeout; nodes write a
//     keep-alive line every second): it is marked down, and the request continues colocated
//     on another decode node from the next token (deterministic sampling gives the same tokens;
//     those already delivered are skipped);
//   - the client going away (on_token false): both nodes are told to cancel.
// Mode auto is resolved here per request (ResolveAuto), before either node is called.
//
// Thread-safety: Generate may be called concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/metrics.h"
#include "core/result.h"
#include "model/model.h"
#include "model/sampler.h"
#include "node/common/http_rpc.h"
#include "node/common/node_config.h"
#include "node/common/protocol.h"
#include "node/common/transfer_mode.h"
#include "node/router/node_pool.h"
#include "node/router/ordered_delivery.h"

namespace smartgen::node {

struct RouterConfig {
  std::string model_path;                  // for the tokenizer and the model fingerprint
  std::vector<std::string> prefill_nodes;  // internal HTTP addresses "host:port"
  std::vector<std::string> decode_nodes;
  TransferMode default_mode = TransferMode::kLayerwise;
  std::string token = kBuiltInToken;       // the nodes' token: signs every control-plane call
  // Who this router is to the nodes (the signed caller name; with control TLS its certificate's
  // name too): they bind each request to it. "" = "router-" and 8 random hex digits.
  std::string name;
  ControlTls control_tls;                  // TLS to the nodes' control plane (off: HTTP)
  HealthOptions health;
  // Create waits at most this long for a decode node (and a prefill node, if any are listed)
  // to be up, then serves with whatever is up.
  core::Nanos startup_wait = core::Seconds(10);
  core::Nanos stream_idle_timeout = core::Seconds(5);  // a decode stream silent this long: hung
  int max_attempts = 3;                                // decode nodes tried per request
};

struct RouteRequest {
  GenerationSpec spec;              // handed to both nodes as it is
  std::string mode;                 // "" = default
  core::Deadline deadline = core::Deadline::Never();
  // True once the client has gone (may be null). Asked at every line of the decode stream,
  // which has one at least every second, so a request whose client left ends within about a
  // second even while no token is due; both nodes are told to cancel.
  std::function<bool()> cancelled;
};

struct RouteResult {
  std::string finish_reason;  // "length" | "stop" | "cancelled"
  nlohmann::json stats;       // mode, nodes, ttft_ms, ttst_ms, prefill_ms, kv figures, ...
};

class Router {
 public:
  // Starts with whichever nodes are up; the others are taken in when they come up.
  static Result<std::unique_ptr<Router>> Create(const RouterConfig& config);

  const model::Model& model() const { return *model_; }
  // The smallest context length of the nodes seen so far (the model's before any).
  std::int64_t context_length() const;

  // `on_token` gets each token of each choice in order (choice in [0, spec.n)), with its
  // log-probabilities when the request asked for them (spec.sampling.logprobs >= 0; else null;
  // valid during the call); false ends that choice, and once every choice has ended before its
  // last token the client has gone (ordered_delivery.h). A request of n choices is one prefill
  // and one KV transfer (decode_node.h). With n > 1 the result's stats carry each choice's
  // finish reason ("finish_reasons").
  using ChoiceSink = OrderedDelivery::ChoiceSink;
  Result<RouteResult> Generate(const RouteRequest& request, const ChoiceSink& on_token);
  // One choice (spec.n == 1).
  using TokenSink = std::function<bool(std::int32_t token, const model::TokenLogprobs* logprobs)>;
  Result<RouteResult> Generate(const RouteRequest& request, const TokenSink& on_token);
  Result<RouteResult> Generate(const RouteRequest& request,
                               const std::function<bool(std::int32_t)>& on_token);

  // OK when at least one decode node is up; kUnavailable otherwise.
  Status Health() const;
  // {"status": "ok" | "degraded" | "unavailable", "prefill": pool, "decode": pool}
  nlohmann::json HealthReport() const;
  void AppendMetrics(std::string* out) const;

 private:
  using Node = NodePool::Node;
  // How one attempt on one decode node ended.
  struct Attempt {
    enum class Kind { kFinished, kNotAccepted, kBrokeMidStream } kind = Kind::kFinished;
    Result<RouteResult> result = RouteResult{};
    bool prefill_ran = false;
  };

  explicit Router(RouterConfig config) : config_(std::move(config)) {}
  // auto mode: layerwise when the link hides the whole transfer behind the prefill, else
  // smartgen. Uses the prefill node's link rate and its measured prefill speed.
  // Layer-wise when the link moves the request's needed KV (window_transfer.h) within the
  // estimated prefill time, else smartgen; `why` gets the figures.
  TransferMode ResolveAuto(const Node& prefill, const GenerationSpec& spec, nlohmann::json* why) const;
  Attempt RunAttempt(const RouteRequest& rq, const RequestId& id, Node* d, Node* p, TransferMode mode,
                     OrderedDelivery& delivery);
  static RequestId NewRequestId();

  RouterConfig config_;
  std::unique_ptr<model::Model> model_;
  mutable core::MetricsRegistry metrics_;
  std::unique_ptr<NodePool> prefill_, decode_;
};

}  // namespace smartgen::node
