#include "node/router/router.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "core/log.h"

namespace smartgen::node {

using nlohmann::json;

namespace {

// Delivers tokens to the client in output order, exactly once, whichever node sent them.
class OrderedDelivery {
 public:
  OrderedDelivery(const std::function<bool(std::int32_t)>& sink, core::Nanos start, int max_tokens)
      : sink_(sink), start_(start), max_tokens_(max_tokens) {}

  // False once the client has gone (the sink said stop). A sink that says stop at the last
  // token of the request is not a cancellation: the request is complete.
  bool Push(int index, std::int32_t token) {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_) return false;
    if (index < next_) return true;  // a duplicate (e.g. token 0 from a fallback)
    pending_.emplace(index, token);
    while (!pending_.empty() && pending_.begin()->first == next_) {
      const std::int32_t t = pending_.begin()->second;
      pending_.erase(pending_.begin());
      const core::Nanos now = core::NowNanos();
      if (next_ < 2) times_[next_] = now - start_;
      ++next_;
      if (!sink_(t) && next_ < max_tokens_) {
        cancelled_ = true;
        return false;
      }
    }
    return true;
  }
  bool cancelled() const {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelled_;
  }
  int delivered() const {
    std::lock_guard<std::mutex> lock(mu_);
    return next_;
  }
  // Request start -> token 0 and token 1 delivered (0 if not yet).
  core::Nanos time_of(int i) const {
    std::lock_guard<std::mutex> lock(mu_);
    return times_[i];
  }

 private:
  const std::function<bool(std::int32_t)>& sink_;
  const core::Nanos start_;
  const int max_tokens_;
  mutable std::mutex mu_;
  int next_ = 0;
  std::map<int, std::int32_t> pending_;
  bool cancelled_ = false;
  core::Nanos times_[2] = {0, 0};
};

core::Nanos Remaining(const core::Deadline& d) {
  return std::max<core::Nanos>(d.Remaining(), core::Millis(1));
}

}  // namespace

Result<std::unique_ptr<Router>> Router::Create(const RouterConfig& config) {
  if (config.decode_nodes.empty()) return InvalidArgument("the router needs at least one decode node");
  std::unique_ptr<Router> r(new Router(config));
  SG_ASSIGN_OR_RETURN(r->model_, model::Model::Load(config.model_path));
  std::random_device rd;
  r->id_base_ = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  for (const auto& [list, pool] : {std::pair{&config.prefill_nodes, &r->prefill_},
                                   std::pair{&config.decode_nodes, &r->decode_}}) {
    for (const std::string& a : *list) {
      auto node = std::make_unique<Node>();
      SG_ASSIGN_OR_RETURN(node->address, ParseNodeAddress(a));
      pool->push_back(std::move(node));
    }
  }
  SG_RETURN_IF_ERROR(r->Connect());
  return r;
}

Status Router::Connect() {
  const core::Deadline deadline = core::Deadline::After(config_.connect_timeout);
  context_length_ = std::numeric_limits<std::int64_t>::max();
  for (auto* pool : {&prefill_, &decode_}) {
    for (auto& node : *pool) {
      Result<json> info = Unavailable("not asked yet");
      while (true) {
        info = GetJson(node->address, "/internal/info", core::Seconds(2));
        if (info.ok() || deadline.Expired()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (!info.ok()) return info.status().WithContext("router: node did not come up");
      SG_ASSIGN_OR_RETURN(node->info, ParseNodeInfo(*info));
      const std::string want = pool == &prefill_ ? "prefill" : "decode";
      if (node->info.role != want) {
        return InvalidArgument("node {} is a {} node, listed as {}", node->address.ToString(),
                               node->info.role, want);
      }
      if (node->info.model_fingerprint != model_->fingerprint()) {
        return FailedPrecondition("node {} serves a different model than the router's {}",
                                  node->address.ToString(), config_.model_path);
      }
      context_length_ = std::min(context_length_, node->info.context_length);
    }
  }
  SG_LOG_INFO("router", "{} prefill and {} decode nodes, context {}", prefill_.size(),
              decode_.size(), context_length_);
  return Status::Ok();
}

Router::Node* Router::Pick(std::vector<std::unique_ptr<Node>>& pool) const {
  const core::Nanos now = core::NowNanos();
  Node* best = nullptr;
  Node* best_any = nullptr;
  for (auto& n : pool) {
    if (!best_any || n->in_flight < best_any->in_flight) best_any = n.get();
    if (n->down_until.load() > now) continue;
    if (!best || n->in_flight < best->in_flight) best = n.get();
  }
  return best ? best : best_any;
}

void Router::MarkDown(Node* node) const {
  node->down_until.store(core::NowNanos() + kNodeBackoff);
  metrics_.GetCounter("smartgen_router_node_failures_total", "Node failures seen by the router",
                      {{"node", node->address.ToString()}}).Increment();
}

std::uint64_t Router::NextRequestId() { return id_base_ + next_id_.fetch_add(1) + 1; }

TransferMode Router::ResolveAuto(const Node& prefill, std::int64_t n_prompt, json* why) const {
  const model::ModelConfig& c = model_->config();
  const NodeInfo& info = prefill.info;
  const std::int64_t bt = std::max(1, info.block_tokens);
  const std::int64_t blocks = (n_prompt + bt - 1) / bt;
  const double kv_bytes = static_cast<double>(blocks * bt) * 2.0 * c.n_layers * c.n_kv_heads *
                          c.head_dim * (info.kv_dtype == "f32" ? 4 : 2);
  const double ms_per_token = prefill.prefill_ms_per_token.load();
  const double prefill_ms = (ms_per_token > 0 ? ms_per_token : 2.0) * static_cast<double>(n_prompt);
  const double link_ms = info.link_gbps > 0 ? kv_bytes * 8 / (info.link_gbps * 1e9) * 1e3 : 0.0;
  // Layer-wise transfer hides behind prefill when the link moves the KV at least as fast as
  // prefill produces it.
  const TransferMode choice =
      link_ms <= prefill_ms ? TransferMode::kLayerwise : TransferMode::kSmartgen;
  *why = {{"choice", TransferModeName(choice)}, {"kv_link_ms", link_ms},
          {"estimated_prefill_ms", prefill_ms}, {"link_gbps", info.link_gbps}};
  return choice;
}

Status Router::Health() const {
  const core::Nanos now = core::NowNanos();
  for (const auto& n : decode_) {
    if (n->down_until.load() <= now) return Status::Ok();
  }
  return Unavailable("no decode node is up");
}

void Router::AppendMetrics(std::string* out) const { metrics_.AppendText(out); }

Result<RouteResult> Router::Generate(const RouteRequest& rq,
                                     const std::function<bool(std::int32_t)>& on_token) {
  TransferMode mode = config_.default_mode;
  if (!rq.mode.empty()) {
    SG_ASSIGN_OR_RETURN(mode, ParseTransferMode(rq.mode));
  }
  const TransferMode requested = mode;
  if (mode != TransferMode::kColocated && prefill_.empty()) {
    return FailedPrecondition("mode '{}' needs a prefill node and the router has none",
                              TransferModeName(mode));
  }
  const bool colocated = mode == TransferMode::kColocated;
  Node* d = Pick(decode_);
  Node* p = colocated ? nullptr : Pick(prefill_);
  json auto_reason = nullptr;
  if (mode == TransferMode::kAuto) {
    mode = ResolveAuto(*p, static_cast<std::int64_t>(rq.prompt.size()), &auto_reason);
  }
  const std::uint64_t id = NextRequestId();
  const core::Nanos start = core::NowNanos();
  d->in_flight++;
  if (p) p->in_flight++;
  struct InFlight {
    Node* a;
    Node* b;
    ~InFlight() {
      a->in_flight--;
      if (b) b->in_flight--;
    }
  } in_flight{d, p};

  OrderedDelivery delivery(on_token, start, rq.max_tokens);
  DecodeCall call;
  call.request_id = id;
  call.prompt = rq.prompt;
  call.max_tokens = rq.max_tokens;
  call.sampling = rq.sampling;
  call.mode = mode;
  call.stop_at_eog = rq.stop_at_eog;
  call.timeout_ms = std::max<std::int64_t>(1, core::ToMillis(Remaining(rq.deadline)));
  call.options = rq.options;

  std::mutex mu;
  std::condition_variable cv;
  bool accepted = false, stream_over = false;
  Status stream_status;
  std::optional<DecodeEvent> last;  // done or error
  std::thread decode_thread([&] {
    Status st = PostStream(d->address, "/internal/decode", ToJson(call), Remaining(rq.deadline),
                           [&](const json& line) {
                             auto ev = ParseDecodeEvent(line);
                             if (!ev.ok()) return false;
                             switch (ev->kind) {
                               case DecodeEvent::Kind::kAccepted: {
                                 std::lock_guard<std::mutex> lock(mu);
                                 accepted = true;
                                 cv.notify_all();
                                 return true;
                               }
                               case DecodeEvent::Kind::kToken:
                                 return delivery.Push(ev->index, ev->token);
                               default: {
                                 std::lock_guard<std::mutex> lock(mu);
                                 last = std::move(*ev);
                                 return true;
                               }
                             }
                           });
    std::lock_guard<std::mutex> lock(mu);
    stream_status = st;
    stream_over = true;
    cv.notify_all();
  });
  auto cancel_at = [&](Node* node) {
    if (node) PostJson(node->address, "/internal/cancel", {{"request_id", id}}, core::Seconds(2)).status().IgnoreError();
  };
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return accepted || stream_over; });
  }

  json prefill_stats = nullptr;
  Status prefill_status;
  if (!colocated && accepted) {
    PrefillCall pc;
    pc.request_id = id;
    pc.prompt = rq.prompt;
    pc.sampling = rq.sampling;
    pc.mode = mode;
    pc.decode_address = d->info.transfer_address;
    pc.timeout_ms = call.timeout_ms;
    pc.options = rq.options;
    auto reply = PostJson(p->address, "/internal/prefill", ToJson(pc), Remaining(rq.deadline));
    Result<PrefillReply> parsed = reply.ok() ? ParsePrefillReply(*reply) : Result<PrefillReply>(reply.status());
    if (parsed.ok()) {
      prefill_stats = ToJson(*parsed);
      const double ms_per_token = parsed->prefill_ms / static_cast<double>(rq.prompt.size());
      const double old = p->prefill_ms_per_token.load();
      p->prefill_ms_per_token.store(old == 0 ? ms_per_token : 0.7 * old + 0.3 * ms_per_token);
      if (!delivery.Push(0, parsed->first_token)) {
        cancel_at(d);
        cancel_at(p);
      }
    } else {
      prefill_status = parsed.status();
      const StatusCode c = prefill_status.code();
      if (c == StatusCode::kInvalidArgument || c == StatusCode::kOutOfRange ||
          c == StatusCode::kResourceExhausted) {
        cancel_at(d);  // the request itself is bad (or the node is full): no fallback
      } else {
        // The prefill node failed: the decode node computes the prompt itself.
        if (c == StatusCode::kUnavailable) MarkDown(p);
        SG_LOG_WARN("router", "request {}: prefill on {} failed ({}); decode node falls back",
                    id, p->address.ToString(), prefill_status.ToString());
        PostJson(d->address, "/internal/fallback",
                 {{"request_id", id}, {"reason", prefill_status.ToString()}}, core::Seconds(2))
            .status()
            .IgnoreError();
      }
    }
  }
  decode_thread.join();

  RouteResult result;
  if (delivery.cancelled()) {
    cancel_at(d);
    cancel_at(p);
    result.finish_reason = "cancelled";
    return result;
  }
  if (!last.has_value()) {
    // The decode stream broke without a final event: the decode node died or was unreachable.
    if (stream_status.code() == StatusCode::kUnavailable) MarkDown(d);
    cancel_at(p);
    if (!prefill_status.ok()) return prefill_status;
    return stream_status.ok() ? Unavailable("decode node {} ended the stream early", d->address.ToString())
                              : stream_status.WithContext(fmt::format("decode node {}", d->address.ToString()));
  }
  if (last->kind == DecodeEvent::Kind::kError) {
    const Status st(last->code, last->message);
    if (!prefill_status.ok() && st.code() == StatusCode::kCancelled) return prefill_status;
    return st;
  }
  result.finish_reason = last->finish_reason;
  json stats = last->stats.is_object() ? last->stats : json::object();
  stats["mode"] = TransferModeName(mode);
  stats["requested_mode"] = TransferModeName(requested);
  if (!auto_reason.is_null()) stats["auto"] = auto_reason;
  stats["request_id"] = id;
  stats["decode_node"] = d->address.ToString();
  if (p) stats["prefill_node"] = p->address.ToString();
  if (!prefill_stats.is_null()) stats["prefill"] = prefill_stats;
  if (!prefill_status.ok()) stats["prefill_error"] = prefill_status.ToString();
  if (delivery.time_of(0)) stats["router_ttft_ms"] = core::ToMillis(delivery.time_of(0));
  if (delivery.time_of(1)) {
    stats["router_ttst_ms"] = core::ToMillis(delivery.time_of(1) - delivery.time_of(0));
  }
  result.stats = std::move(stats);
  metrics_.GetCounter("smartgen_router_requests_total", "Requests routed, by mode and outcome",
                      {{"mode", std::string(TransferModeName(mode))}, {"outcome", "ok"}})
      .Increment();
  return result;
}

}  // namespace smartgen::node
