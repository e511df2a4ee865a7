#include "node/router/router.h"

#include <condition_variable>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "core/log.h"
#include "node/common/window_transfer.h"
#include "node/router/ordered_delivery.h"
#include "select/auto_mode.h"

namespace smartgen::node {

using nlohmann::json;

namespace {

// How long a decode stream that finished waits for its prefill call's reply (its figures).
constexpr core::Nanos kPrefillReplyGrace = core::Seconds(1);

core::Nanos Remaining(const core::Deadline& d) {
  return std::max<core::Nanos>(d.Remaining(), core::Millis(1));
}

bool IsRequestError(StatusCode c) {
  return c == StatusCode::kInvalidArgument || c == StatusCode::kOutOfRange ||
         c == StatusCode::kFailedPrecondition;
}

}  // namespace

Result<std::unique_ptr<Router>> Router::Create(const RouterConfig& config) {
  if (config.decode_nodes.empty()) return InvalidArgument("the router needs at least one decode node");
  SG_RETURN_IF_ERROR(config.control_tls.Validate());
  std::unique_ptr<Router> r(new Router(config));
  if (r->config_.name.empty()) r->config_.name = "router-" + RequestId::Random().ToHex().substr(0, 8);
  SG_ASSIGN_OR_RETURN(r->model_, model::Model::Load(config.model_path));
  const std::uint64_t fp = r->model_->fingerprint();
  NodeAddress credentials;
  credentials.token = config.token;
  credentials.caller = r->config_.name;
  if (config.control_tls.enabled()) credentials.tls = std::make_shared<const ControlTls>(config.control_tls);
  SG_ASSIGN_OR_RETURN(r->prefill_, NodePool::Create("prefill", config.prefill_nodes, fp, credentials, config.health, &r->metrics_));
  SG_ASSIGN_OR_RETURN(r->decode_, NodePool::Create("decode", config.decode_nodes, fp, credentials, config.health, &r->metrics_));
  const core::Deadline wait = core::Deadline::After(config.startup_wait);
  while (!wait.Expired() &&
         (r->decode_->up_count() == 0 || (!r->prefill_->empty() && r->prefill_->up_count() == 0))) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  SG_LOG_INFO("router", "prefill nodes up {}/{}, decode nodes up {}/{}", r->prefill_->up_count(),
              r->prefill_->size(), r->decode_->up_count(), r->decode_->size());
  return r;
}

std::int64_t Router::context_length() const {
  std::int64_t c = model_->config().n_ctx_train;
  for (const NodePool* pool : {prefill_.get(), decode_.get()}) {
    const std::int64_t n = pool->context_length();
    if (n > 0) c = std::min(c, n);
  }
  return c;
}

RequestId Router::NewRequestId() {
  // 128 random bits: an id seen in one response says nothing about another request's.
  return RequestId::Random();
}

TransferMode Router::ResolveAuto(const Node& prefill, const GenerationSpec& spec, json* why) const {
  const model::ModelConfig& c = model_->config();
  const NodeInfo& info = prefill.info;
  const int bt = std::max(1, info.block_tokens);
  const auto n_prompt = static_cast<std::int64_t>(spec.prompt.size());
  // What layer-wise would move: the needed blocks (a sliding-window layer's window). A bad
  // window_aware value is refused by the nodes; here it counts as the default.
  const Result<bool> aware = ParseWindowAware(spec.options);
  const select::NeededBlocks needed =
      select::PromptNeededBlocks(c, bt, n_prompt, !aware.ok() || *aware);
  const double kv_bytes = static_cast<double>(needed.Total()) * bt * 2.0 * c.head_dim *
                          (info.kv_dtype == "f32" ? 4 : 2);
  const double ms_per_token = prefill.prefill_ms_per_token.load();
  const double prefill_ms = (ms_per_token > 0 ? ms_per_token : 2.0) * static_cast<double>(n_prompt);
  // The link rate the prefill node measured (reported with each prefill), else its configured one.
  const double measured = prefill.link_bytes_per_s.load();
  const double rate = measured > 0 ? measured : info.link_gbps * 1e9 / 8;  // bytes/s
  // Layer-wise transfer hides behind prefill when the link moves the KV at least as fast as
  // prefill produces it (select/auto_mode.h, the simulator's rule too).
  const select::AutoDecision d = select::ChooseAutoMode(kv_bytes, rate, prefill_ms);
  const TransferMode choice =
      d.choice == select::AutoChoice::kLayerwise ? TransferMode::kLayerwise : TransferMode::kSmartgen;
  *why = {{"choice", TransferModeName(choice)}, {"kv_bytes", kv_bytes}, {"kv_link_ms", d.kv_link_ms},
          {"estimated_prefill_ms", prefill_ms}, {"link_gbps", rate * 8 / 1e9},
          {"link_measured", measured > 0}};
  return choice;
}

Status Router::Health() const {
  if (decode_->up_count() > 0) return Status::Ok();
  return Unavailable("no decode node is up");
}

json Router::HealthReport() const {
  const bool decode_ok = decode_->up_count() > 0;
  const bool all = decode_->up_count() == static_cast<int>(decode_->size()) &&
                   prefill_->up_count() == static_cast<int>(prefill_->size());
  return {{"status", !decode_ok ? "unavailable" : all ? "ok" : "degraded"},
          {"prefill", prefill_->Report()},
          {"decode", decode_->Report()}};
}

void Router::AppendMetrics(std::string* out) const {
  metrics_.AppendText(out);
  core::AppendMetricHeader(out, "smartgen_router_nodes_up", "Nodes whose health checks pass, by pool", "gauge");
  core::AppendMetricSample(out, "smartgen_router_nodes_up", {{"pool", "prefill"}}, prefill_->up_count());
  core::AppendMetricSample(out, "smartgen_router_nodes_up", {{"pool", "decode"}}, decode_->up_count());
}

Router::Attempt Router::RunAttempt(const RouteRequest& rq, const RequestId& id, Node* d, Node* p,
                                   TransferMode mode, OrderedDelivery& delivery) {
  Attempt attempt;
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

  DecodeCall call;
  call.request_id = id;
  // The secret that lets the prefill node p, and no other link, send this request's KV.
  if (p) call.kv_ticket = KvTicket::Random();
  call.spec = rq.spec;
  call.mode = mode;
  call.timeout_ms = std::max<std::int64_t>(1, core::ToMillis(Remaining(rq.deadline)));

  std::mutex mu;
  std::condition_variable cv;
  bool accepted = false, stream_over = false;
  Status stream_status;
  std::optional<DecodeEvent> last;  // done or error
  AbortableCall decode_call;
  NodePool::CallGuard decode_guard(d, &decode_call);
  std::atomic<bool> client_gone{false};
  const core::Nanos idle = std::min(config_.stream_idle_timeout, Remaining(rq.deadline));
  std::thread decode_thread([&] {
    Status st = PostStream(
        d->address, "/internal/decode", ToJson(call), idle,
        [&](const json& line) {
          // (Once every token is delivered the server may signal too: the request is complete,
          // and its final line still counts.)
          if (rq.cancelled && !delivery.complete() && rq.cancelled()) {
            client_gone.store(true);
            return false;
          }
          auto ev = ParseDecodeEvent(line);
          if (!ev.ok()) return false;
          switch (ev->kind) {
            case DecodeEvent::Kind::kAlive: return true;
            case DecodeEvent::Kind::kAccepted: {
              std::lock_guard<std::mutex> lock(mu);
              accepted = true;
              cv.notify_all();
              return true;
            }
            case DecodeEvent::Kind::kToken:
              return delivery.PushChoice(ev->choice, ev->index, ev->token,
                                         ev->logprobs ? &*ev->logprobs : nullptr);
            default: {
              std::lock_guard<std::mutex> lock(mu);
              last = std::move(*ev);
              return true;
            }
          }
        },
        &decode_call);
    std::lock_guard<std::mutex> lock(mu);
    stream_status = st;
    stream_over = true;
    cv.notify_all();
  });
  auto cancel_at = [&](Node* node) {
    if (node) PostJson(node->address, "/internal/cancel", RequestRef(id), core::Seconds(2)).status().IgnoreError();
  };
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return accepted || stream_over; });
  }

  // The prefill runs beside the decode stream; it is aborted if the stream ends first (the
  // decode node fell back, or failed) so a hung prefill node holds nothing.
  json prefill_stats = nullptr;
  Status prefill_status;
  AbortableCall prefill_call;  // aborted here when the stream ends, or by the health checks
  std::atomic<bool> decode_over{false};
  bool prefill_over = false;  // under mu
  std::optional<NodePool::CallGuard> prefill_guard;
  std::thread prefill_thread;
  if (p && accepted) {
    attempt.prefill_ran = true;
    prefill_guard.emplace(p, &prefill_call);
    prefill_thread = std::thread([&] {
      struct Over {  // however the call ends, the stream side may stop waiting for it
        std::mutex& mu;
        std::condition_variable& cv;
        bool& over;
        ~Over() {
          std::lock_guard<std::mutex> lock(mu);
          over = true;
          cv.notify_all();
        }
      } over{mu, cv, prefill_over};
      PrefillCall pc;
      pc.request_id = id;
      pc.kv_ticket = call.kv_ticket;
      pc.spec = rq.spec;
      pc.mode = mode;
      pc.decode_address = d->info.transfer_address;
      pc.timeout_ms = call.timeout_ms;
      auto reply = prefill_call.PostJson(p->address, "/internal/prefill", ToJson(pc), Remaining(rq.deadline));
      Result<PrefillReply> parsed = reply.ok() ? ParsePrefillReply(*reply) : Result<PrefillReply>(reply.status());
      if (parsed.ok()) {
        prefill_stats = ToJson(*parsed);
        const double ms_per_token = parsed->prefill_ms / static_cast<double>(rq.spec.prompt.size());
        const double old = p->prefill_ms_per_token.load();
        p->prefill_ms_per_token.store(old == 0 ? ms_per_token : 0.7 * old + 0.3 * ms_per_token);
        if (parsed->stats.value("link_measured", false)) {
          p->link_bytes_per_s.store(parsed->stats.value("link_bytes_per_s", 0.0));
        }
        return;  // token 1 comes on the decode stream (PrefillDone crossed the KV link)
      }
      prefill_status = parsed.status();
      if (decode_over.load()) return;  // aborted here: the decode side ended first
      const StatusCode c = prefill_status.code();
      if (IsRequestError(c) || c == StatusCode::kResourceExhausted) {
        cancel_at(d);  // the request itself is bad (or the node is full): no fallback
        return;
      }
      // The prefill node failed: the decode node computes the prompt itself.
      if (c == StatusCode::kUnavailable) prefill_->MarkDown(p, prefill_status);
      SG_LOG_WARN("router", "request {}: prefill on {} failed ({}); decode node falls back", id.ToHex(),
                  p->address.ToString(), prefill_status.ToString());
      PostJson(d->address, "/internal/fallback", RequestRef(id), core::Seconds(2)).status().IgnoreError();
    });
  }
  decode_thread.join();
  if (prefill_thread.joinable()) {
    // A short request can finish before the prefill reply (sent once token 1 has crossed the
    // link) gets here: a stream that ended well waits a moment for it, for its figures.
    bool finished_well = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      finished_well = last.has_value() && last->kind == DecodeEvent::Kind::kDone;
    }
    if (finished_well) {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait_for(lock, std::chrono::nanoseconds(std::min(kPrefillReplyGrace, Remaining(rq.deadline))),
                  [&] { return prefill_over; });
    }
    decode_over.store(true);
    prefill_call.Abort();
    prefill_thread.join();
  }

  if (delivery.cancelled() || client_gone.load()) {
    cancel_at(d);
    cancel_at(p);
    attempt.result = RouteResult{"cancelled", json::object()};
    return attempt;
  }
  if (!last.has_value()) {
    // The stream broke without a final event: the decode node died, hung, or refused.
    cancel_at(p);
    const StatusCode c = stream_status.code();
    const bool node_fault = c == StatusCode::kUnavailable || c == StatusCode::kDeadlineExceeded ||
                            c == StatusCode::kCancelled || c == StatusCode::kDataLoss || stream_status.ok();
    if (node_fault) {
      decode_->MarkDown(d, stream_status.ok() ? Unavailable("stream ended early") : stream_status);
      attempt.kind = accepted ? Attempt::Kind::kBrokeMidStream : Attempt::Kind::kNotAccepted;
    } else if (c == StatusCode::kResourceExhausted && !accepted) {
      attempt.kind = Attempt::Kind::kNotAccepted;  // full: another node may have room
    }
    attempt.result = !prefill_status.ok() && IsRequestError(prefill_status.code())
                         ? Status(prefill_status)
                         : stream_status.ok() ? Unavailable("decode node {} ended the stream early", d->address.ToString())
                                              : stream_status.WithContext(fmt::format("decode node {}", d->address.ToString()));
    return attempt;
  }
  if (last->kind == DecodeEvent::Kind::kError) {
    const Status st(last->code, last->message);
    attempt.result = !prefill_status.ok() && st.code() == StatusCode::kCancelled ? prefill_status : st;
    return attempt;
  }
  RouteResult result;
  result.finish_reason = last->finish_reason;
  json stats = last->stats.is_object() ? last->stats : json::object();
  stats["decode_node"] = d->address.ToString();
  if (p) stats["prefill_node"] = p->address.ToString();
  if (!prefill_stats.is_null()) stats["prefill"] = prefill_stats;
  if (!prefill_status.ok()) stats["prefill_error"] = prefill_status.ToString();
  result.stats = std::move(stats);
  attempt.result = std::move(result);
  return attempt;
}

Result<RouteResult> Router::Generate(const RouteRequest& rq,
                                     const std::function<bool(std::int32_t)>& on_token) {
  return Generate(rq, TokenSink([&on_token](std::int32_t t, const model::TokenLogprobs*) {
                    return on_token(t);
                  }));
}

Result<RouteResult> Router::Generate(const RouteRequest& rq, const TokenSink& on_token) {
  if (rq.spec.n != 1)
    return InvalidArgument("a one-choice sink for a request of {} choices", rq.spec.n);
  return Generate(rq, ChoiceSink([&on_token](int, std::int32_t t, const model::TokenLogprobs* lp) {
                    return on_token(t, lp);
                  }));
}

Result<RouteResult> Router::Generate(const RouteRequest& rq, const ChoiceSink& on_token) {
  if (rq.spec.n < 1 || rq.spec.n > kMaxChoices) {
    return InvalidArgument("n {} is outside [1, {}]", rq.spec.n, kMaxChoices);
  }
  if (rq.spec.n > 1 && rq.spec.teacher_forced()) {
    return InvalidArgument("teacher forcing (forced_tokens) takes one choice, not n = {}",
                           rq.spec.n);
  }
  TransferMode mode = config_.default_mode;
  if (!rq.mode.empty()) {
    SG_ASSIGN_OR_RETURN(mode, ParseTransferMode(rq.mode));
  }
  const TransferMode requested = mode;
  if (mode != TransferMode::kColocated && prefill_->empty()) {
    return FailedPrecondition("mode '{}' needs a prefill node and the router has none",
                              TransferModeName(mode));
  }
  json degraded = nullptr;
  Node* p = nullptr;
  if (mode != TransferMode::kColocated) {
    p = prefill_->Pick();
    if (p == nullptr) {
      // No prefill node is up: the decode node computes the prompt (correct, just slower).
      degraded = "no prefill node is up; ran colocated";
      mode = TransferMode::kColocated;
    }
  }
  json auto_reason = nullptr;
  if (mode == TransferMode::kAuto) {
    mode = ResolveAuto(*p, rq.spec, &auto_reason);
  }
  const core::Nanos start = core::NowNanos();
  OrderedDelivery delivery(on_token, start, rq.spec.max_tokens, rq.spec.n);
  std::set<Node*> tried;
  Result<RouteResult> outcome = Unavailable("no decode node is up");
  json failovers = json::array();
  RequestId id;
  for (int a = 0; a < std::max(1, config_.max_attempts); ++a) {
    Node* d = decode_->Pick(tried);
    if (d == nullptr) break;
    tried.insert(d);
    id = NewRequestId();
    Attempt attempt = RunAttempt(rq, id, d, mode == TransferMode::kColocated ? nullptr : p, mode, delivery);
    outcome = std::move(attempt.result);
    if (attempt.kind == Attempt::Kind::kFinished || rq.deadline.Expired()) break;
    failovers.push_back({{"decode_node", d->address.ToString()}, {"error", outcome.status().ToString()}});
    SG_LOG_WARN("router", "request {}: decode node {} failed ({}); trying another", id.ToHex(),
                d->address.ToString(), outcome.status().ToString());
    if (attempt.kind == Attempt::Kind::kBrokeMidStream) {
      // The KV went to the node that failed: the next one computes the prompt itself.
      mode = TransferMode::kColocated;
      p = nullptr;
    }
  }
  if (!outcome.ok()) return outcome.status();
  RouteResult result = std::move(*outcome);
  json& stats = result.stats;
  stats["mode"] = TransferModeName(mode);
  stats["requested_mode"] = TransferModeName(requested);
  if (!auto_reason.is_null()) stats["auto"] = auto_reason;
  if (!degraded.is_null()) {
    // The prompt was computed on the decode node because no prefill node could: a fallback.
    stats["degraded"] = degraded;
    stats["fallback"] = true;
    stats["prefill_error"] = "no prefill node is up";
  }
  if (!failovers.empty()) stats["failovers"] = failovers;
  stats["request_id"] = id.ToHex();
  if (delivery.time_of(0)) stats["router_ttft_ms"] = core::ToMillis(delivery.time_of(0));
  if (delivery.time_of(1)) {
    stats["router_ttst_ms"] = core::ToMillis(delivery.time_of(1) - delivery.time_of(0));
  }
  metrics_.GetCounter("smartgen_router_requests_total", "Requests routed, by mode and outcome",
                      {{"mode", std::string(TransferModeName(mode))}, {"outcome", "ok"}})
      .Increment();
  return result;
}

}  // namespace smartgen::node
