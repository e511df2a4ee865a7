// NodePool: the router's view of the prefill or the decode nodes: which are up, how loaded,
// and what each said about itself. Active health checks keep it true to within a heartbeat:
// one thread per node asks GET /health every health_interval (and /internal/info until the
// node first answered, so a router can start with nodes down and take them in as they come);
// health_failures failures in a row mark the node down and abort the calls in flight to it,
// one success marks it up again. A request that finds a node failing marks it down at once.
//
// Thread-safety: all methods are thread-safe. Nodes live as long as the pool.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/metrics.h"
#include "core/result.h"
#include "node/common/http_rpc.h"
#include "node/common/protocol.h"

namespace smartgen::node {

struct HealthOptions {
  core::Nanos interval = core::Millis(500);  // between checks of one node
  core::Nanos timeout = core::Seconds(1);    // of one check
  int failures = 2;                          // failed checks in a row that mark a node down
};

class NodePool {
 public:
  struct Node {
    NodeAddress address;
    std::atomic<bool> known{false};  // `info` is set (written once, before known)
    NodeInfo info;
    std::atomic<bool> up{false};
    std::atomic<int> in_flight{0};
    std::atomic<double> prefill_ms_per_token{0};  // EWMA over its replies (0 = none yet)
    std::atomic<double> link_bytes_per_s{0};      // its KV link rate as it measured it (0 = not yet)
    std::atomic<int> failed_checks{0};
    std::mutex calls_mu;
    std::set<AbortableCall*> calls;  // in flight to this node, aborted when it is marked down
  };

  // `role`: "prefill" | "decode"; `fingerprint`: the router's model (nodes must match).
  // `credentials`' token, caller name and TLS are used for every call to the nodes
  // (control_auth.h, control_tls.h); its host and port are not.
  static Result<std::unique_ptr<NodePool>> Create(std::string role, const std::vector<std::string>& addresses,
                                                  std::uint64_t fingerprint, const NodeAddress& credentials,
                                                  HealthOptions options, core::MetricsRegistry* metrics);
  ~NodePool();  // stops the health threads

  bool empty() const { return nodes_.empty(); }
  std::size_t size() const { return nodes_.size(); }
  int up_count() const;
  // The least-loaded node that is up and not in `exclude`; null when there is none.
  Node* Pick(const std::set<Node*>& exclude = {}) const;
  // A request saw the node fail: down now (and its calls in flight aborted when `abort`).
  void MarkDown(Node* node, const Status& why, bool abort = false);
  // The smallest context length among the nodes known so far (0 when none is known).
  std::int64_t context_length() const;
  // {"up": n, "total": m, "nodes": [{"address", "up"}...]}
  nlohmann::json Report() const;

  // Registers `call` as in flight to `node` for the guard's life.
  class CallGuard {
   public:
    CallGuard(Node* node, AbortableCall* call);
    ~CallGuard();
    CallGuard(const CallGuard&) = delete;
    CallGuard& operator=(const CallGuard&) = delete;

   private:
    Node* node_;
    AbortableCall* call_;
  };

 private:
  NodePool(std::string role, std::uint64_t fingerprint, HealthOptions options, core::MetricsRegistry* metrics)
      : role_(std::move(role)), fingerprint_(fingerprint), options_(options), metrics_(metrics) {}
  // One check of `node`: learns its info first, then its health.
  Status Check(Node& node);
  void HealthLoop(Node* node);
  void SetUp(Node& node, bool up, const Status& why, bool abort);

  const std::string role_;
  const std::uint64_t fingerprint_;
  const HealthOptions options_;
  core::MetricsRegistry* metrics_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace smartgen::node
