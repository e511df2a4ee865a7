// PrefillNode: computes prompts and their first token, and ships the KV to the decode node the
// router chose, over the transfer engine. `smartgen serve prefill` runs one.
//
//   POST /internal/prefill  PrefillCall -> PrefillReply (after prefill; the KV may still be in
//                                          flight: the decode node waits for it)
//   POST /internal/cancel   {"request_id"}: only from the caller of its /internal/prefill
//                           (403 otherwise, logged; 404 for an id not known here)
//   GET  /internal/info, /health, /metrics
//
// Prefills run one at a time in arrival order on the node's compute threads. Per mode:
//   full      - after the prefill, every block is pushed;
//   layerwise - each layer's blocks are pushed as soon as that layer is computed;
//   smartgen  - as each layer is computed: its block summaries, then its proactive blocks
//               (SmartgenPrefill), sized to what the link carries during the prefill; after
//               the prefill, every other block streams at the lowest priority
//               (SpeculativeSender) until the decode node is exact or done;
// and PrefillDone (the first token) goes to the decode node over the same link. The KV stays
// under a transfer lease until the decode node finishes the request, cancels it, or the lease
// expires; then it is freed.
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/metrics.h"
#include "core/result.h"
#include "node/common/control_messages.h"
#include "node/common/http_rpc.h"
#include "node/common/node_config.h"
#include "node/common/protocol.h"
#include "node/prefill/prefill_estimate.h"
#include "node/prefill/prefill_kv_store.h"
#include "node/prefill/speculative_sender.h"
#include "select/needed_blocks.h"
#include "transfer/endpoint.h"

namespace smartgen::node {

class SmartgenPrefill;

class PrefillNode {
 public:
  // `transport` overrides config.transport (tests inject a fault transport).
  static Result<std::unique_ptr<PrefillNode>> Create(const NodeConfig& config,
                                              std::shared_ptr<transfer::Transport> transport = nullptr);
  ~PrefillNode();

  Status Start();
  void Stop();

  int http_port() const { return http_port_; }
  NodeInfo Info() const;
  const model::Model& model() const { return *rt_.model; }
  std::string MetricsText() const;

  // Handles one control message as if it came from `peer` over the KV link (tests).
  void HandleControlForTest(transfer::PeerId peer, std::uint32_t type, transfer::ConstBytes bytes) {
    OnControl(peer, type, bytes);
  }

  // Runs one prefill now, on the calling thread (the HTTP handler queues to the worker instead).
  Result<PrefillReply> RunPrefill(const PrefillCall& call);

 private:
  struct Job;
  explicit PrefillNode(NodeConfig config, NodeRuntime runtime);

  void HandlePrefill(const httplib::Request& req, httplib::Response& res);
  void HandleCancel(const httplib::Request& req, httplib::Response& res);
  void Worker();
  // The connected peer at `address`, connecting (or reconnecting) if needed.
  Result<transfer::PeerId> PeerFor(const std::string& address, core::Deadline deadline);
  // Pushes the needed blocks of layers [first_layer, end_layer) (full, layerwise).
  Status PushLayers(transfer::PeerId peer, std::uint64_t request_id, int first_layer,
                    int end_layer, const select::NeededBlocks& needed, core::Deadline deadline);
  // Bytes one block takes on the wire in `wire`.
  double WireBlockBytes(transfer::WireFormat wire) const;
  Status Push(transfer::PeerId peer, std::vector<transfer::BlockRange> ranges,
              transfer::Priority priority, core::Deadline deadline,
              transfer::WireFormat wire = transfer::WireFormat::kNative);
  // SmartGen's first decode step, here (SmartgenOptions::first_step): token 1 through the model
  // on a copy of the request's KV, each layer's query ranking its blocks; announces the top
  // ones per layer and pushes them ahead of everything else. A step that cannot run (no room
  // for the copy) announces nothing; the decode node then selects by itself. Returns the
  // milliseconds it took.
  Result<double> RunFirstStep(transfer::PeerId peer, std::uint64_t request_id, std::int32_t token,
                              SmartgenPrefill& sg, const kv::SequenceKv& kv, core::Deadline deadline);
  Status SendControl(transfer::PeerId peer, std::span<const std::byte> bytes, ControlType type);
  Status SendControl(transfer::PeerId peer, const ControlMessage& m);
  void OnControl(transfer::PeerId peer, std::uint32_t type, transfer::ConstBytes bytes);
  void OnPeerDown(transfer::PeerId peer, const Status& why);
  // The KV link's rate to `peer` in bytes/s: measured by the endpoint, else the configured
  // emulated rate, else 0 (unknown).
  double LinkRate(transfer::PeerId peer) const;
  // A throwaway prefill of n tokens (NodeConfig::warmup_tokens), recorded as a measurement.
  Status Warmup(std::int64_t n_tokens);

  NodeConfig config_;
  NodeRuntime rt_;
  PrefillEstimate estimate_;  // the measured prefill time, for the proactive budget
  PrefillKvStore store_;
  std::unique_ptr<transfer::Endpoint> endpoint_;
  std::mutex peer_down_mu_;  // OnPeerDown uses endpoint_ under it, unless stopping_
  bool stopping_ = false;    // guarded by peer_down_mu_; set by Stop before endpoint_ goes
  std::unique_ptr<httplib::Server> http_;  // HTTPS with config_.control_tls
  std::thread http_thread_;
  int http_port_ = 0;

  std::mutex peers_mu_;
  std::map<std::string, transfer::PeerId> peers_;
  std::unique_ptr<SpeculativeSender> speculative_;
  // Requests whose KV is held for a decode node, and the link they use.
  std::mutex active_mu_;
  std::map<std::uint64_t, transfer::PeerId> active_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  // Who asked for each request (by link handle), from its /internal/prefill until its KV is
  // released: only that caller may cancel it.
  struct Owner {
    RequestId id;
    std::string caller;
  };
  std::map<std::uint64_t, Owner> owners_;
  bool stop_ = false;
  std::thread worker_;

  core::MetricsRegistry metrics_;
  RequestVerifier auth_;          // /internal/* calls must be signed with the node token
  core::Counter* auth_refused_;
  core::Counter* prefills_ok_;
  core::Counter* prefills_failed_;
  core::Counter* prompt_tokens_;
  core::Counter* bytes_pushed_;
  core::Histogram* prefill_seconds_;
  core::Gauge* queue_depth_;
  core::Counter* bad_control_;
  core::Counter* call_refused_;
};

}  // namespace smartgen::node
