// DecodeNode: generates tokens 2..n of requests whose prompt KV arrives from prefill nodes
// (or computes the prompt itself: colocated mode, and the fallback when a prefill node or its
// link fails). `smartgen serve decode` runs one. A thin HTTP front over the requests' state
// machines (request_state.h) and the continuous-batching engine (decode_engine.h).
//
//   POST /internal/decode    DecodeCall -> NDJSON: accepted, token..., done | error; an
//                            {"event":"alive"} line after each second without one, so a caller
//                            can tell a silent node from a slow request
//   POST /internal/cancel    {"request_id"}
//   POST /internal/fallback  {"request_id", "reason"}: the router could not get a prefill
//   (cancel and fallback only from the caller that registered the request: 403 otherwise,
//   404 for an id not running here)
//   GET  /internal/info, /health, /metrics
//
// A request is registered (KV reserved for prompt + output) before the router asks the prefill
// node to start, so pushed blocks always find their sequence. The prefill node's messages on
// the KV link move it along (a PrefillStarted that proves the request's KV ticket ties it to
// that link, PrefillDone carries token 1);
// it starts when its mode's KV condition holds (full and layerwise: every prompt block;
// smartgen: every layer's summaries and proactive blocks) and joins the continuous batch.
// A request of n > 1 choices (GenerationSpec::n) has one prefill and one KV transfer: token 1
// of every choice comes from the prefill node (kChoiceTokens, then PrefillDone), choice 0
// decodes as a one-choice request would, and each other choice forks the prompt's KV once it
// is exact here and decodes densely in its copy (decode_request.h). In smartgen mode that means
// choices 1..n-1 start at time-to-exact, not at the proactive set: their TTST is that of
// full transfer, choice 0's is SmartGen's. Colocated and fallback: choice 0 computes the
// prompt, the others fork its KV and sample token 1 from its logits. If the
// prefill side fails, goes silent past its state's deadline, or its link drops before the KV is
// complete, the prompt is computed here instead, so the client still gets a correct answer.
// Control messages that are malformed, unexpected, or from a link the request is not tied to
// are dropped and counted (smartgen_decode_control_rejected_total); so are KV data frames from
// any other link, before they are written (smartgen_decode_kv_refused_total).
//
// Thread-safety: Start/Stop from one thread; everything else is internal. Stop ends the engine
// (every stream gets its last line), then HTTP, then the KV endpoint, before any member goes.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/metrics.h"
#include "core/result.h"
#include "node/common/control_messages.h"
#include "node/common/http_rpc.h"
#include "node/common/node_config.h"
#include "node/common/protocol.h"
#include "node/decode/decode_engine.h"
#include "node/decode/decode_kv_store.h"
#include "node/decode/decode_request.h"
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
  // Requests registered and not ended (tests: nothing is left behind).
  std::size_t active_requests() const;

  // Handles one control message as if it came from `peer` over the KV link (tests).
  void HandleControlForTest(transfer::PeerId peer, std::uint32_t type, transfer::ConstBytes bytes) {
    OnControl(peer, type, bytes);
  }

 private:
  using RequestPtr = std::shared_ptr<DecodeRequest>;
  explicit DecodeNode(NodeConfig config, NodeRuntime runtime);

  void HandleDecode(const httplib::Request& req, httplib::Response& res);
  void HandleCancel(const httplib::Request& req, httplib::Response& res);
  void HandleFallback(const httplib::Request& req, httplib::Response& res);
  // Validates and registers a request; its engine job and stream are started by HandleDecode.
  Result<RequestPtr> Register(DecodeCall call, std::string caller);
  // The request a cancel / fallback call names, when its caller registered it; else the reply
  // is written (400, 404, or 403 logged and counted) and the status returned.
  Result<RequestPtr> OwnedRequest(const httplib::Request& req, httplib::Response& res);
  void Submit(const RequestPtr& r);
  void OnControl(transfer::PeerId peer, std::uint32_t type, transfer::ConstBytes bytes);
  // On the receiver thread, before the peer's later data: a PrefillStarted proving its
  // request's ticket ties the request's KV to that link (DecodeKvStore::Bind).
  void OnControlArrived(transfer::PeerId peer, std::uint32_t type, transfer::ConstBytes bytes);
  void OnPeerDown(transfer::PeerId peer, const Status& why);
  Readiness CheckReady(DecodeRequest& r);
  // Choice i >= 1 of an n > 1 request (decode_request.h): starts in a fork of the prompt's KV
  // once that KV is exact here. `self` keeps the request alive for a pull it may post.
  Readiness CheckChoiceReady(const RequestPtr& self, int choice);
  // One choice's engine job ended; the request finishes (Finish) when every choice has.
  void ChoiceDone(const RequestPtr& r, int choice, const Status& status, const std::string& reason,
                  const nlohmann::json& engine_stats);
  // Moves r to `to` (r.mu held): logged at debug and counted. False for an illegal edge.
  bool Move(DecodeRequest& r, DecodeState to);
  // The single place a waiting request is switched to computing its prompt here (r.mu held).
  void WantFallback(DecodeRequest& r, std::string reason);
  void Finish(const RequestPtr& r, const Status& status, const std::string& reason,
              const nlohmann::json& engine_stats);
  RequestPtr FindRequest(std::uint64_t id) const;
  void Reject(transfer::PeerId peer, std::uint32_t type, const Status& why);
  // SmartGen: posts an on-demand pull of `keys` to the request's prefill node.
  // Pulls `keys` at on-demand priority, in `wire`. Exact copies are announced to the prefill
  // node (kRequested) so its speculative stream skips them; int8 copies are not.
  Status Fetch(DecodeRequest& r, const std::vector<kv::BlockKey>& keys, transfer::WireFormat wire,
               transfer::Priority priority = transfer::Priority::kOnDemand);
  // Computes the prompt here and fills every absent block of the request's KV.
  Status RecomputeMissing(DecodeRequest& r);
  void RecordSmartgen(const nlohmann::json& sg);

  NodeConfig config_;
  NodeRuntime rt_;
  DecodeKvStore store_;
  std::unique_ptr<transfer::Endpoint> endpoint_;
  std::shared_ptr<DecodeEngine> engine_;  // shared: the KV store's block callback holds it weakly
  std::unique_ptr<model::Forward> recompute_forward_;  // for recomputing KV inside a decode step
  std::unique_ptr<httplib::Server> http_;  // HTTPS with config_.control_tls
  std::thread http_thread_;
  int http_port_ = 0;
  std::string transfer_address_;

  mutable std::mutex mu_;
  std::unordered_map<std::uint64_t, RequestPtr> requests_;

  core::MetricsRegistry metrics_;
  RequestVerifier auth_;          // /internal/* calls must be signed with the node token
  core::Counter* auth_refused_;
  core::Counter* requests_ok_;
  core::Counter* requests_failed_;
  core::Counter* fallbacks_;
  core::Counter* bad_control_;
  core::Counter* kv_refused_;
  core::Counter* call_refused_;
  core::Counter* transitions_[kDecodeStateCount];
  core::Histogram* kv_wait_seconds_;
  core::Histogram* time_to_exact_seconds_;
  core::Histogram* on_demand_ratio_;
};

}  // namespace smartgen::node
