// DecodeNode: generates tokens 2..n of requests whose prompt KV arrives from prefill nodes
// (or computes the prompt itself: colocated mode, and the fallback when a prefill node or its
// link dies). `smartgen serve decode` runs one.
//
//   POST /internal/decode  DecodeCall -> NDJSON: accepted, token..., done | error
//   POST /internal/cancel  {"request_id"}
//   GET  /internal/info, /health, /metrics
//
// A request is registered (KV reserved for prompt + output) before the router asks the prefill
// node to start, so pushed blocks always find their sequence. It waits until the prefill node
// says it is done (PrefillDone, over the KV link) and its mode's KV condition holds (full and
// layerwise: every prompt block present; smartgen: every layer's summaries and proactive
// blocks present), then joins the continuous batch. SmartGen requests decode through a
// SmartgenSession (on-demand fetches, LSE merge) until every block has arrived. If the prefill
// node fails, or its link goes down before the KV is complete, the request is computed here
// from its prompt instead, so the client still gets a correct answer.
//
// Thread-safety: Start/Stop from one thread; everything else is internal.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/metrics.h"
#include "core/result.h"
#include "node/decode/decode_engine.h"
#include "node/decode/decode_kv_store.h"
#include "node/common/http_rpc.h"
#include "node/common/node_config.h"
#include "node/common/protocol.h"
#include "node/decode/smartgen_session.h"
#include "transfer/endpoint.h"

namespace smartgen::node {

class DecodeNode {
 public:
  // `transport` overrides config.transport (tests inject a fault transport).
  static Result<std::unique_ptr<DecodeNode>> Create(const NodeConfig& config,
                                              std::shared_ptr<transfer::Transport> transport = nullptr);
  ~DecodeNode();

  // Binds the transfer listener and the HTTP port, and starts serving.
  Status Start();
  void Stop();

  int http_port() const { return http_port_; }
  const std::string& transfer_address() const { return transfer_address_; }
  NodeInfo Info() const;
  const model::Model& model() const { return *rt_.model; }
  std::string MetricsText() const;

 private:
  struct Request;
  explicit DecodeNode(NodeConfig config, NodeRuntime runtime);

  void HandleDecode(const httplib::Request& req, httplib::Response& res);
  void HandleCancel(const httplib::Request& req, httplib::Response& res);
  void OnControl(transfer::PeerId peer, std::uint32_t type, transfer::ConstBytes bytes);
  void OnPeerDown(transfer::PeerId peer, const Status& why);
  Readiness CheckReady(Request& r);
  void Finish(const std::shared_ptr<Request>& r, const Status& status, const std::string& reason,
              const nlohmann::json& engine_stats);
  std::shared_ptr<Request> FindRequest(std::uint64_t id) const;
  // SmartGen: posts an on-demand pull of `keys` to the request's prefill node.
  Status Fetch(Request& r, const std::vector<select::BlockKey>& keys);
  // Computes the prompt here and fills every absent block of the request's KV.
  Status RecomputeMissing(Request& r);

  NodeConfig config_;
  NodeRuntime rt_;
  DecodeKvStore store_;
  std::unique_ptr<transfer::Endpoint> endpoint_;
  std::unique_ptr<DecodeEngine> engine_;
  std::unique_ptr<model::Forward> recompute_forward_;  // for recomputing KV inside a decode step
  httplib::Server http_;
  std::thread http_thread_;
  int http_port_ = 0;
  std::string transfer_address_;

  mutable std::mutex mu_;
  std::unordered_map<std::uint64_t, std::shared_ptr<Request>> requests_;

  core::MetricsRegistry metrics_;
  core::Counter* requests_ok_;
  core::Counter* requests_failed_;
  core::Counter* fallbacks_;
  core::Histogram* kv_wait_seconds_;
  // SmartGen, per finished request.
  void RecordSmartgen(const nlohmann::json& sg);
  core::Histogram* time_to_exact_seconds_;
  core::Histogram* on_demand_ratio_;
};

}  // namespace smartgen::node
