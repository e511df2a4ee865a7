#include "node/router/node_pool.h"

#include "core/log.h"

namespace smartgen::node {

Result<std::unique_ptr<NodePool>> NodePool::Create(std::string role, const std::vector<std::string>& addresses,
                                                   std::uint64_t fingerprint, const NodeAddress& credentials,
                                                   HealthOptions options, core::MetricsRegistry* metrics) {
  std::unique_ptr<NodePool> pool(new NodePool(std::move(role), fingerprint, options, metrics));
  for (const std::string& a : addresses) {
    auto node = std::make_unique<Node>();
    SG_ASSIGN_OR_RETURN(node->address, ParseNodeAddress(a));
    node->address.token = credentials.token;
    node->address.caller = credentials.caller;
    node->address.tls = credentials.tls;
    pool->nodes_.push_back(std::move(node));
  }
  // A first round at once (in parallel), so the nodes that are up serve the first request. The
  // pool owns these threads and joins them (here, and in its destructor) before any member goes.
  std::vector<std::thread> first;
  for (auto& n : pool->nodes_) {
    first.emplace_back([p = pool.get(), node = n.get()] {
      const Status st = p->Check(*node);
      if (!st.ok()) SG_LOG_WARN("router", "{} node {} is not up yet: {}", p->role_, node->address.ToString(), st.ToString());
      p->SetUp(*node, st.ok(), st, false);
    });
  }
  for (auto& t : first) t.join();
  for (auto& n : pool->nodes_) pool->threads_.emplace_back([p = pool.get(), node = n.get()] { p->HealthLoop(node); });
  return pool;
}

NodePool::~NodePool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

Status NodePool::Check(Node& node) {
  if (!node.known.load(std::memory_order_acquire)) {
    SG_ASSIGN_OR_RETURN(nlohmann::json j, GetJson(node.address, "/internal/info", options_.timeout));
    SG_ASSIGN_OR_RETURN(NodeInfo info, ParseNodeInfo(j));
    if (info.role != role_) {
      return FailedPrecondition("node {} is a {} node, listed as {}", node.address.ToString(), info.role, role_);
    }
    if (info.model_fingerprint != fingerprint_) {
      return FailedPrecondition("node {} serves a different model than the router", node.address.ToString());
    }
    node.info = std::move(info);
    node.known.store(true, std::memory_order_release);
    return Status::Ok();
  }
  return GetOk(node.address, "/health", options_.timeout);
}

void NodePool::HealthLoop(Node* node) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, std::chrono::nanoseconds(options_.interval), [&] { return stop_; })) {
    lock.unlock();
    const Status st = Check(*node);
    if (st.ok()) {
      node->failed_checks.store(0);
      SetUp(*node, true, st, false);
    } else if (node->failed_checks.fetch_add(1) + 1 >= options_.failures || !node->up.load()) {
      SetUp(*node, false, st, /*abort=*/true);
    }
    lock.lock();
  }
}

void NodePool::SetUp(Node& node, bool up, const Status& why, bool abort) {
  const bool was = node.up.exchange(up && node.known.load(std::memory_order_acquire));
  if (was == node.up.load()) return;
  if (node.up.load()) {
    SG_LOG_INFO("router", "{} node {} is up", role_, node.address.ToString());
    return;
  }
  SG_LOG_WARN("router", "{} node {} is down: {}", role_, node.address.ToString(), why.ToString());
  metrics_->GetCounter("smartgen_router_node_failures_total", "Node failures seen by the router",
                       {{"node", node.address.ToString()}})
      .Increment();
  if (!abort) return;
  std::lock_guard<std::mutex> lock(node.calls_mu);
  for (AbortableCall* c : node.calls) c->Abort();
}

void NodePool::MarkDown(Node* node, const Status& why, bool abort) {
  node->failed_checks.store(options_.failures);
  SetUp(*node, false, why, abort);
}

int NodePool::up_count() const {
  int n = 0;
  for (const auto& node : nodes_) n += node->up.load() ? 1 : 0;
  return n;
}

NodePool::Node* NodePool::Pick(const std::set<Node*>& exclude) const {
  Node* best = nullptr;
  for (const auto& n : nodes_) {
    if (!n->up.load() || exclude.count(n.get())) continue;
    if (!best || n->in_flight.load() < best->in_flight.load()) best = n.get();
  }
  return best;
}

std::int64_t NodePool::context_length() const {
  std::int64_t c = 0;
  for (const auto& n : nodes_) {
    if (!n->known.load(std::memory_order_acquire)) continue;
    c = c == 0 ? n->info.context_length : std::min(c, n->info.context_length);
  }
  return c;
}

nlohmann::json NodePool::Report() const {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : nodes_) nodes.push_back({{"address", n->address.ToString()}, {"up", n->up.load()}});
  return {{"up", up_count()}, {"total", nodes_.size()}, {"nodes", std::move(nodes)}};
}

NodePool::CallGuard::CallGuard(Node* node, AbortableCall* call) : node_(node), call_(call) {
  std::lock_guard<std::mutex> lock(node_->calls_mu);
  node_->calls.insert(call_);
}

NodePool::CallGuard::~CallGuard() {
  std::lock_guard<std::mutex> lock(node_->calls_mu);
  node_->calls.erase(call_);
}

}  // namespace smartgen::node
