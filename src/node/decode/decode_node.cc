#include "node/decode/decode_node.h"

#include "core/log.h"
#include "node/common/node_metrics.h"
#include "node/common/transfer_metrics.h"
#include "node/common/window_transfer.h"

namespace smartgen::node {

using nlohmann::json;

namespace {

RequestDeadlines DeadlinesOf(const NodeConfig& c) {
  RequestDeadlines d;
  d.prefill_start = core::Seconds(c.prefill_start_timeout_s);
  d.kv_progress = core::Seconds(c.kv_progress_timeout_s);
  d.step = core::Seconds(c.step_timeout_s);
  return d;
}

}  // namespace

Result<std::unique_ptr<DecodeNode>> DecodeNode::Create(const NodeConfig& config,
                                                std::shared_ptr<transfer::Transport> transport) {
  SG_ASSIGN_OR_RETURN(NodeRuntime rt, BuildNodeRuntime(config, std::move(transport)));
  return std::unique_ptr<DecodeNode>(new DecodeNode(config, std::move(rt)));
}

DecodeNode::DecodeNode(NodeConfig config, NodeRuntime runtime)
    : config_(std::move(config)), rt_(std::move(runtime)), store_(rt_.blocks.get()), auth_(config_.token) {
  auth_refused_ = &metrics_.GetCounter("smartgen_node_auth_refused_total",
                                       "Control-plane calls refused: unsigned, wrong token, stale or replayed");
  requests_ok_ = &metrics_.GetCounter("smartgen_decode_requests_total", "Decode requests by outcome",
                                      {{"outcome", "ok"}});
  requests_failed_ = &metrics_.GetCounter("smartgen_decode_requests_total",
                                          "Decode requests by outcome", {{"outcome", "error"}});
  fallbacks_ = &metrics_.GetCounter("smartgen_decode_fallbacks_total",
                                    "Requests whose prompt was recomputed here after a prefill failure");
  kv_refused_ = &metrics_.GetCounter("smartgen_decode_kv_refused_total",
                                     "KV data frames refused: from a link the request is not tied to");
  store_.set_refused_counter(kv_refused_);
  call_refused_ = &metrics_.GetCounter("smartgen_node_call_refused_total",
                                       "Signed calls about a request refused: the caller is not the one "
                                       "that registered it");
  bad_control_ = &metrics_.GetCounter("smartgen_decode_control_rejected_total",
                                      "Control messages from peers that were malformed, unexpected or "
                                      "not from the request's link");
  for (int s = 0; s < kDecodeStateCount; ++s) {
    transitions_[s] = &metrics_.GetCounter(
        "smartgen_decode_state_transitions_total", "Decode request state transitions, by new state",
        {{"state", std::string(DecodeStateName(static_cast<DecodeState>(s)))}});
  }
  kv_wait_seconds_ = &metrics_.GetHistogram(
      "smartgen_decode_kv_wait_seconds", "Registration to decode start (waiting for prefill and KV)",
      core::LatencyBuckets());
  time_to_exact_seconds_ = &metrics_.GetHistogram(
      "smartgen_decode_time_to_exact_seconds",
      "SmartGen: request start to every KV block present on the decode node", core::LatencyBuckets());
  static const double kRatioBuckets[] = {0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0};
  on_demand_ratio_ = &metrics_.GetHistogram(
      "smartgen_decode_on_demand_ratio",
      "SmartGen: share of a request's selected blocks that had to be fetched on demand", kRatioBuckets);
}

DecodeNode::~DecodeNode() { Stop(); }

Status DecodeNode::Start() {
  engine_ = std::make_shared<DecodeEngine>(rt_.forward.get(), DecodeEngineOptions{config_.max_batch});
  recompute_forward_ = std::make_unique<model::Forward>(
      *rt_.model, rt_.pool.get(), model::ForwardOptions{rt_.forward->max_context()});
  // Readiness is signalled: a landed block may complete a waiting request's KV condition.
  store_.set_on_block_ready([engine = std::weak_ptr<DecodeEngine>(engine_)] {
    if (auto e = engine.lock()) e->Wake();
  });
  transfer::EndpointCallbacks cb;
  cb.on_control = [this](transfer::PeerId peer, std::uint32_t type, transfer::ConstBytes bytes) {
    OnControl(peer, type, bytes);
  };
  cb.on_control_arrived = [this](transfer::PeerId peer, std::uint32_t type, transfer::ConstBytes bytes) {
    OnControlArrived(peer, type, bytes);
  };
  cb.on_peer_down = [this](transfer::PeerId peer, const Status& why) { OnPeerDown(peer, why); };
  SG_ASSIGN_OR_RETURN(endpoint_, transfer::Endpoint::Create(rt_.endpoint_config, rt_.transport,
                                                            /*source=*/nullptr, &store_, cb));
  SG_ASSIGN_OR_RETURN(const std::string bound, endpoint_->Listen(config_.transfer_address));
  SG_ASSIGN_OR_RETURN(transfer_address_, AdvertisedAddress(config_.advertise, bound));  // to peers

  SG_ASSIGN_OR_RETURN(http_, MakeControlServer(config_.control_tls));
  http_->Post("/internal/decode", Authenticated(&auth_, auth_refused_, [this](const httplib::Request& q, httplib::Response& s) {
    HandleDecode(q, s);
  }));
  http_->Post("/internal/cancel", Authenticated(&auth_, auth_refused_, [this](const httplib::Request& q, httplib::Response& s) {
    HandleCancel(q, s);
  }));
  http_->Post("/internal/fallback", Authenticated(&auth_, auth_refused_, [this](const httplib::Request& q, httplib::Response& s) {
    HandleFallback(q, s);
  }));
  http_->Get("/internal/info", Authenticated(&auth_, auth_refused_, [this](const httplib::Request&, httplib::Response& s) {
    ReplyJson(s, ToJson(Info()));
  }));
  SG_ASSIGN_OR_RETURN(http_port_, StartNodeHttp(*http_, config_.http_host, config_.http_port,
                                                 [this] { return MetricsText(); }, &http_thread_));
  SG_LOG_INFO("decode", "{}: HTTP{} {}:{}, KV transfer {}, model {}", config_.name,
              config_.control_tls.enabled() ? "S (mutual TLS)" : "", config_.http_host, http_port_, transfer_address_, rt_.model->config().ToString());
  return Status::Ok();
}

void DecodeNode::Stop() {
  // Ownership order: the engine ends every job (each stream gets its last line and its HTTP
  // writer returns), then HTTP stops, then the endpoint, whose callbacks reach this node.
  if (engine_) engine_->Stop();
  if (http_thread_.joinable()) {
    http_->stop();
    http_thread_.join();
  }
  endpoint_.reset();
}

NodeInfo DecodeNode::Info() const {
  NodeInfo i;
  i.role = "decode";
  i.name = config_.name;
  i.transfer_address = transfer_address_;
  i.model_fingerprint = rt_.model->fingerprint();
  i.model_name = rt_.model->config().name;
  i.context_length = rt_.forward->max_context();
  i.block_tokens = config_.block_tokens;
  i.kv_dtype = config_.kv_dtype;
  i.link_gbps = config_.link_gbps;
  return i;
}

std::size_t DecodeNode::active_requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_.size();
}

std::string DecodeNode::MetricsText() const {
  std::string out = metrics_.Text();
  core::AppendMetricHeader(&out, "smartgen_decode_running", "Sequences in the decode batch", "gauge");
  core::AppendMetricSample(&out, "smartgen_decode_running", {}, engine_ ? engine_->running() : 0);
  core::AppendMetricHeader(&out, "smartgen_decode_waiting", "Sequences waiting for KV", "gauge");
  core::AppendMetricSample(&out, "smartgen_decode_waiting", {}, engine_ ? engine_->waiting() : 0);
  core::AppendMetricHeader(&out, "smartgen_decode_requests_active", "Requests registered and not ended", "gauge");
  core::AppendMetricSample(&out, "smartgen_decode_requests_active", {}, static_cast<double>(active_requests()));
  if (endpoint_) AppendTransferMetrics(endpoint_->GetMetrics(), &out);
  AppendNodeMetrics(&out, "smartgen_decode", "decode", rt_.model->config().name, *rt_.blocks);
  return out;
}

bool DecodeNode::Move(DecodeRequest& r, DecodeState to) {
  const DecodeState from = r.state.state();
  if (!r.state.Transition(to, core::NowNanos())) return false;
  transitions_[static_cast<int>(to)]->Increment();
  SG_LOG_DEBUG("decode", "request {}: {} -> {}", r.id(), DecodeStateName(from),
               DecodeStateName(to));
  return true;
}

void DecodeNode::WantFallback(DecodeRequest& r, std::string reason) {
  const DecodeState s = r.state.state();
  if (r.fallback_wanted || (s != DecodeState::kRegistered && s != DecodeState::kAwaitingKv)) return;
  r.fallback_wanted = true;
  r.fallback_reason = std::move(reason);
  engine_->Wake();
}

DecodeNode::RequestPtr DecodeNode::FindRequest(std::uint64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second;
}

Result<DecodeNode::RequestPtr> DecodeNode::Register(DecodeCall call, std::string caller) {
  const std::int64_t n_prompt = static_cast<std::int64_t>(call.spec.prompt.size());
  if (call.spec.max_tokens < 1 || n_prompt < 1) return InvalidArgument("empty prompt or max_tokens < 1");
  if (n_prompt + call.spec.max_tokens > rt_.forward->max_context()) {
    return OutOfRange("prompt of {} tokens + {} output tokens exceeds the context length {}", n_prompt,
                      call.spec.max_tokens, rt_.forward->max_context());
  }
  for (std::int32_t t : call.spec.prompt) {
    if (t < 0 || t >= rt_.model->config().n_vocab) {
      return InvalidArgument("token id {} is outside the vocabulary", t);
    }
  }
  if (call.mode == TransferMode::kAuto) return InvalidArgument("mode 'auto' is resolved by the router");
  // Checked in every mode, so a bad value is refused the same way whatever the route.
  SG_RETURN_IF_ERROR(ParseWindowAware(call.spec.options).status());
  std::optional<select::SmartgenOptions> options;
  if (call.mode == TransferMode::kSmartgen) {
    SG_ASSIGN_OR_RETURN(options, select::ParseSmartgenOptions(call.spec.options));
  }
  if (!call.request_id.valid()) return InvalidArgument("decode call: no request id");
  auto r = std::make_shared<DecodeRequest>(std::move(call), std::move(caller), DeadlinesOf(config_));
  const std::uint64_t id = r->id();
  select::NeededBlocks needed;
  const std::int64_t capacity = n_prompt + r->call.spec.max_tokens;
  // Every choice's KV is reserved now, so a full pool is a refusal here (another decode node
  // may have room), never a failure mid-request.
  const int n = r->call.spec.n;
  r->finish_reasons.assign(static_cast<std::size_t>(n), "");
  r->choice_tokens_out.assign(static_cast<std::size_t>(n), 0);
  r->choices.resize(static_cast<std::size_t>(n - 1));
  for (DecodeRequest::Choice& c : r->choices) {
    c.kv = std::make_unique<kv::SequenceKv>(rt_.blocks.get());
    SG_RETURN_IF_ERROR(c.kv->Reserve(capacity).WithContext(fmt::format("the KV of {} choices", n)));
  }
  r->pull_rest = n > 1 && options && !options->speculative;
  r->session_recovers = options && options->fetch_on_demand;
  if (r->call.mode == TransferMode::kColocated) {
    r->local_kv = std::make_unique<kv::SequenceKv>(rt_.blocks.get());
    SG_RETURN_IF_ERROR(r->local_kv->Reserve(capacity));
  } else {
    // What the decode needs of the prompt (sliding-window layers: their window), as the prefill
    // node works it out: only that is awaited.
    SG_ASSIGN_OR_RETURN(needed, RequestNeededBlocks(rt_.model->config(), rt_.blocks->geometry().block_tokens,
                                                    r->call.spec));
    SG_ASSIGN_OR_RETURN(r->entry, store_.Add(id, n_prompt, capacity,
                                             r->call.mode == TransferMode::kSmartgen, needed.FirstBlocks()));
  }
  if (options) {
    const std::weak_ptr<DecodeRequest> weak = r;
    auto session = std::make_unique<SmartgenSession>(
        rt_.model->config(), &r->entry->kv, &r->entry->residency, n_prompt, *options,
        select::PickProfile(rt_.profiles, n_prompt), needed,
        [this, weak,
         wire = options->int8_wire ? transfer::WireFormat::kInt8 : transfer::WireFormat::kNative](
            const std::vector<kv::BlockKey>& keys) {
          auto rr = weak.lock();
          return rr ? Fetch(*rr, keys, wire) : Cancelled("request ended");
        },
        [this, weak] {
          auto rr = weak.lock();
          return rr ? RecomputeMissing(*rr) : Cancelled("request ended");
        },
        core::Seconds(config_.step_timeout_s));
    session->set_staged(&r->entry->staged);
    session->set_pool(rt_.pool.get());
    session->set_link_rate([this] { return endpoint_->GetMetrics().receive_gbps * 1e9 / 8; });
    session->set_on_exact([this, weak] {
      auto rr = weak.lock();
      if (!rr) return;
      // Every block is here: the prefill node may free its copy and stop streaming.
      std::lock_guard<std::mutex> lock(rr->mu);
      Move(*rr, DecodeState::kExact);
      if (rr->peer && !rr->link_finished) {
        endpoint_->FinishRequest(*rr->peer, rr->id()).IgnoreError();
        rr->link_finished = true;
      }
    });
    r->smartgen = std::move(session);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!requests_.emplace(id, r).second) {
    // The same id again, or another whose link handle is the same (one in 2^64): refused, so a
    // handle names one request here.
    if (r->entry) store_.Remove(id);
    return InvalidArgument("request {} (KV link handle {}) is already running here",
                           r->call.request_id.ToHex(), id);
  }
  return r;
}

void DecodeNode::Submit(const RequestPtr& r) {
  EngineJob job;
  job.request_id = r->id();
  job.kv = r->local_kv ? r->local_kv.get() : &r->entry->kv;
  job.attention = r->smartgen.get();
  job.owner = r;
  job.spec = r->call.spec;
  job.deadline = core::Deadline::After(r->call.timeout_ms * core::kNanosPerMilli);
  if (r->call.mode != TransferMode::kColocated) {
    job.ready = [this, r] { return CheckReady(*r); };
  } else {
    std::lock_guard<std::mutex> lock(r->mu);
    Move(*r, DecodeState::kRunning);
  }
  job.on_token = [r](int index, std::int32_t token, const model::TokenLogprobs* logprobs) {
    r->events->Push(ToJson(DecodeEvent::Token(index, token, logprobs)).dump());
    return !r->client_gone.load();
  };
  job.on_done = [this, r](const Status& st, const std::string& reason, const json& stats) {
    ChoiceDone(r, 0, st, reason, stats);
  };
  if (r->call.spec.n > 1) {
    job.on_prompt_logits = [r](const std::vector<float>& logits) {
      std::lock_guard<std::mutex> lock(r->mu);
      r->prompt_logits = logits;
    };
  }
  engine_->Submit(std::move(job));
  for (int i = 1; i < r->call.spec.n; ++i) {
    EngineJob c;
    c.request_id = r->id();
    c.kv = r->choices[static_cast<std::size_t>(i - 1)].kv.get();
    c.owner = r;
    c.spec = r->call.spec;
    c.spec.sampling = r->call.spec.ChoiceSampling(i);
    c.deadline = core::Deadline::After(r->call.timeout_ms * core::kNanosPerMilli);
    c.ready = [this, r, i] { return CheckChoiceReady(r, i); };
    c.on_token = [r, i](int index, std::int32_t token, const model::TokenLogprobs* logprobs) {
      r->events->Push(ToJson(DecodeEvent::Token(index, token, logprobs, i)).dump());
      return !r->client_gone.load();
    };
    c.on_done = [this, r, i](const Status& st, const std::string& reason, const json& stats) {
      ChoiceDone(r, i, st, reason, stats);
    };
    engine_->Submit(std::move(c));
  }
}

void DecodeNode::HandleDecode(const httplib::Request& req, httplib::Response& res) {
  auto body = ParseJsonText(req.body);
  if (!body.ok()) return ReplyStatus(res, body.status());
  auto call = ParseDecodeCall(*body);
  if (!call.ok()) return ReplyStatus(res, call.status());
  auto r = Register(std::move(*call), CallerOf(req));
  if (!r.ok()) return ReplyStatus(res, r.status());
  RequestPtr request = *r;
  request->events->Push(ToJson(DecodeEvent::Accepted()).dump());
  Submit(request);
  const std::uint64_t id = request->id();
  StreamLines(res, request->events, [this, id, weak = std::weak_ptr<DecodeRequest>(request)] {
    if (auto rr = weak.lock()) rr->client_gone.store(true);
    engine_->Cancel(id);
  });
}

Result<DecodeNode::RequestPtr> DecodeNode::OwnedRequest(const httplib::Request& req,
                                                         httplib::Response& res) {
  auto body = ParseJsonText(req.body);
  Result<RequestId> id = body.ok() ? ParseRequestRef(*body, req.path.c_str()) : Result<RequestId>(body.status());
  if (!id.ok()) {
    ReplyStatus(res, id.status());
    return id.status();
  }
  RequestPtr r = FindRequest(id->link_handle());
  if (r == nullptr || r->call.request_id != *id) {
    // Ended already (a late cancel), or never here: a guessed id finds nothing.
    SG_LOG_INFO("decode", "{}: {} for request {} from {} ({}): not running here", config_.name, req.path,
                id->ToHex(), CallerOf(req), req.remote_addr);
    const Status st = NotFound("request {} is not running here", id->ToHex());
    ReplyStatus(res, st);
    return st;
  }
  const std::string caller = CallerOf(req);
  if (caller != r->owner) {
    call_refused_->Increment();
    SG_LOG_WARN("decode", "{}: refused {} for request {} from '{}' ({}): registered by '{}'", config_.name,
                req.path, id->ToHex(), caller, req.remote_addr, r->owner);
    const Status st = PermissionDenied("request {} was registered by another router", id->ToHex());
    ReplyStatus(res, st);
    res.status = 403;  // signed, but not the request's router
    return st;
  }
  return r;
}

void DecodeNode::HandleCancel(const httplib::Request& req, httplib::Response& res) {
  auto r = OwnedRequest(req, res);
  if (!r.ok()) return;
  engine_->Cancel((*r)->id());
  endpoint_->CancelRequest((*r)->id());
  ReplyJson(res, json::object());
}

void DecodeNode::HandleFallback(const httplib::Request& req, httplib::Response& res) {
  auto r = OwnedRequest(req, res);
  if (!r.ok()) return;
  std::lock_guard<std::mutex> lock((*r)->mu);
  WantFallback(**r, "the router reported a prefill failure");
  ReplyJson(res, json::object());
}

Readiness DecodeNode::CheckReady(DecodeRequest& r) {
  std::lock_guard<std::mutex> lock(r.mu);
  const std::uint64_t id = r.id();
  const core::Nanos now = core::NowNanos();
  if (r.entry) r.state.Progress(r.entry->last_block_at.load(std::memory_order_relaxed));
  if (!r.fallback_wanted && r.state.Expired(now)) {
    WantFallback(r, fmt::format("no word from the prefill side within the {} deadline",
                                DecodeStateName(r.state.state())));
  }
  if (r.fallback_wanted) {
    // Compute the prompt here, into fresh KV: blocks may still be landing in the old one.
    store_.Remove(id);
    endpoint_->CancelRequest(id);
    Move(r, DecodeState::kFallback);
    r.local_kv = std::make_unique<kv::SequenceKv>(rt_.blocks.get());
    const Status st = r.local_kv->Reserve(static_cast<std::int64_t>(r.call.spec.prompt.size()) + r.call.spec.max_tokens);
    if (!st.ok()) return Readiness::Fail(st);
    fallbacks_->Increment();
    SG_LOG_WARN("decode", "request {}: computing the prompt locally ({})", id, r.fallback_reason);
    r.kv_ready_at = now;
    return Readiness::PrefillLocally(r.local_kv.get());
  }
  if (!r.prefill_done) return Readiness::Wait();
  if (r.smartgen) {
    if (!r.smartgen->Ready(r.prefill_done_at)) return Readiness::Wait();
    r.kv_ready_at = now;
    Move(r, DecodeState::kRunning);
    return Readiness::Go(r.first_token);
  }
  if (!r.entry->residency.AllPresent()) return Readiness::Wait();
  r.kv_ready_at = now;
  Move(r, DecodeState::kExact);
  // Every block is here: the prefill node may free its copy now.
  if (r.peer && !r.link_finished) {
    endpoint_->FinishRequest(*r.peer, id).IgnoreError();
    r.link_finished = true;
  }
  return Readiness::Go(r.first_token);
}

void DecodeNode::RecordSmartgen(const json& sg) {
  if (sg.contains("time_to_exact_ms")) time_to_exact_seconds_->Observe(sg["time_to_exact_ms"].get<double>() / 1e3);
  on_demand_ratio_->Observe(sg.value("on_demand_ratio", 0.0));
  const json by_path = sg.value("bytes_by_path", json::object());
  for (const auto& [path, bytes] : by_path.items()) {
    metrics_.GetCounter("smartgen_decode_kv_bytes_by_path_total", "SmartGen bytes received, by path",
                        {{"path", path}})
        .Increment(bytes.get<double>());
  }
  const json stalls = sg.value("layer_stall_ms", json::array());
  for (std::size_t l = 0; l < stalls.size(); ++l) {
    metrics_.GetCounter("smartgen_decode_layer_stall_seconds_total",
                        "SmartGen: decode time spent waiting for on-demand blocks, by layer",
                        {{"layer", std::to_string(l)}})
        .Increment(stalls[l].get<double>() / 1e3);
  }
}

void DecodeNode::Finish(const RequestPtr& r, const Status& status, const std::string& reason,
                        const json& engine_stats) {
  const std::uint64_t id = r->id();
  json stats = engine_stats;
  {
    std::lock_guard<std::mutex> lock(r->mu);
    stats["mode"] = TransferModeName(r->call.mode);
    stats["fallback"] = r->state.state() == DecodeState::kFallback || r->recomputed;
    double on_wire = 0;
    if (r->entry) {
      // Everything that crossed the link for this request: blocks kept, blocks dropped as
      // duplicates, and SmartGen's summaries (below).
      stats["kv_bytes_received"] = static_cast<double>(r->entry->bytes_received.load());
      on_wire =
          static_cast<double>(r->entry->bytes_received.load() + r->entry->bytes_duplicate.load());
      stats["kv_blocks_duplicate"] = r->entry->blocks_duplicate.load();
      // Blocks no step needs (before a sliding window): given back to the pool at registration.
      stats["kv_blocks_released"] =
          r->entry->residency.total_blocks() - r->entry->residency.needed_total();
    } else {
      stats["kv_bytes_received"] = 0;
    }
    if (r->prefill_done_at) stats["prefill_done_ms"] = core::ToMillis(r->prefill_done_at - r->start);
    if (r->smartgen) {
      const json sg = r->smartgen->Stats(r->start, r->entry->blocks_received.load(),
                                         r->entry->blocks_requested_received.load());
      for (auto& [k, v] : sg.items()) stats[k] = v;
      on_wire += sg["bytes_by_path"].value("summaries", 0.0);
      RecordSmartgen(sg);
    } else if (r->entry && r->entry->residency.AllPresent() && r->kv_ready_at) {
      stats["time_to_exact_ms"] = core::ToMillis(r->kv_ready_at - r->start);
    }
    stats["kv_bytes_on_wire"] = on_wire;
    if (r->kv_ready_at) {
      stats["kv_ready_ms"] = core::ToMillis(r->kv_ready_at - r->start);
      kv_wait_seconds_->Observe(core::ToSeconds(r->kv_ready_at - r->start));
    }
    if (r->peer && !r->link_finished) {
      endpoint_->FinishRequest(*r->peer, id).IgnoreError();
      r->link_finished = true;
    }
    Move(*r, !status.ok() ? DecodeState::kFailed
                          : reason == "cancelled" ? DecodeState::kCancelled : DecodeState::kDone);
  }
  if (r->entry) store_.Remove(id);
  {
    // Unregistered and counted before the last event goes out: a caller that has read the end
    // of the stream sees the request gone from active_requests() and the metrics.
    std::lock_guard<std::mutex> lock(mu_);
    requests_.erase(id);
  }
  if (status.ok()) {
    requests_ok_->Increment();
    r->events->Close(ToJson(DecodeEvent::Done(reason, stats)).dump());
  } else {
    requests_failed_->Increment();
    r->events->Close(ToJson(DecodeEvent::Error(status)).dump());
  }
}

}  // namespace smartgen::node
