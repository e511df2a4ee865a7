// Router: the front of a disaggregated deployment. It holds pools of prefill and decode nodes
// (any number of each), picks one of each per request (least loaded among the healthy ones),
// streams token 1 from the prefill node as soon as it has it, and the rest from the decode node.
// The HTTP API (server layer) sits on top of it through an adapter.
//
// Per request: register at the decode node (POST /internal/decode, streamed), then prefill at
// the prefill node (POST /internal/prefill), which ships the KV straight to that decode node.
// Tokens are delivered in order exactly once (a reorder buffer keyed by output index), whichever
// node produced them. Failures:
//   - prefill node down or failing: the decode node is told to compute the prompt itself
//     (/internal/fallback), so the request still completes correctly;
//   - decode node down mid-request: the client gets kUnavailable at once; the prefill node is
//     told to cancel. A node that failed is avoided for a while (kNodeBackoff).
//   - the client going away (on_token false): both nodes are told to cancel.
// Mode auto is resolved here per request (ResolveAuto), before either node is called.
//
// Thread-safety: Generate may be called concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/metrics.h"
#include "core/result.h"
#include "model/model.h"
#include "model/sampler.h"
#include "node/common/http_rpc.h"
#include "node/common/protocol.h"
#include "node/common/transfer_mode.h"

namespace smartgen::node {

struct RouterConfig {
  std::string model_path;                  // for the tokenizer and the model fingerprint
  std::vector<std::string> prefill_nodes;  // internal HTTP addresses "host:port"
  std::vector<std::string> decode_nodes;
  TransferMode default_mode = TransferMode::kLayerwise;
  core::Nanos connect_timeout = core::Seconds(30);  // waiting for nodes at start-up
};

struct RouteRequest {
  std::vector<std::int32_t> prompt;
  int max_tokens = 16;
  model::SamplingParams sampling;
  std::string mode;                 // "" = default
  nlohmann::json options;           // passed to the nodes (mode-specific)
  bool stop_at_eog = true;
  core::Deadline deadline = core::Deadline::Never();
};

struct RouteResult {
  std::string finish_reason;  // "length" | "stop" | "cancelled"
  nlohmann::json stats;       // mode, nodes, ttft_ms, ttst_ms, prefill_ms, kv figures, ...
};

class Router {
 public:
  static Result<std::unique_ptr<Router>> Create(const RouterConfig& config);

  const model::Model& model() const { return *model_; }
  std::int64_t context_length() const { return context_length_; }

  Result<RouteResult> Generate(const RouteRequest& request,
                               const std::function<bool(std::int32_t)>& on_token);

  // OK when at least one decode node (and, for disaggregated modes, one prefill node) is up.
  Status Health() const;
  void AppendMetrics(std::string* out) const;

 private:
  struct Node {
    NodeAddress address;
    NodeInfo info;
    std::atomic<int> in_flight{0};
    std::atomic<core::Nanos> down_until{0};
    std::atomic<double> prefill_ms_per_token{0};  // EWMA over its replies (0 = none yet)
  };
  static constexpr core::Nanos kNodeBackoff = core::Seconds(5);

  explicit Router(RouterConfig config) : config_(std::move(config)) {}
  Status Connect();
  // The least-loaded healthy node (or the least-loaded one if none is healthy).
  Node* Pick(std::vector<std::unique_ptr<Node>>& pool) const;
  // auto mode: layerwise when the link hides the whole transfer behind the prefill, else
  // smartgen. Uses the prefill node's link rate and its measured prefill speed.
  TransferMode ResolveAuto(const Node& prefill, std::int64_t n_prompt, nlohmann::json* why) const;
  void MarkDown(Node* node) const;
  std::uint64_t NextRequestId();

  RouterConfig config_;
  std::unique_ptr<model::Model> model_;
  std::int64_t context_length_ = 0;
  std::vector<std::unique_ptr<Node>> prefill_, decode_;
  std::atomic<std::uint64_t> next_id_{0};
  std::uint64_t id_base_ = 0;

  mutable core::MetricsRegistry metrics_;
};

}  // namespace smartgen::node
