#include "node/decode/decode_node.h"

#include <cstring>

#include "core/log.h"
#include "node/common/smartgen_messages.h"
#include "node/common/transfer_metrics.h"

namespace smartgen::node {

using nlohmann::json;

struct DecodeNode::Request {
  DecodeCall call;
  std::shared_ptr<DecodeKvStore::Entry> entry;  // prompt KV filled over the link (disaggregated)
  std::unique_ptr<kv::SequenceKv> local_kv;     // KV computed here (colocated or fallback)
  std::unique_ptr<SmartgenSession> smartgen;    // smartgen mode
  std::shared_ptr<LineQueue> events = std::make_shared<LineQueue>();
  core::Nanos start = core::NowNanos();
  std::atomic<bool> client_gone{false};

  std::mutex mu;  // guards the fields below
  bool prefill_done = false;
  std::int32_t first_token = -1;
  std::optional<transfer::PeerId> peer;
  bool fallback = false;       // compute the prompt here: the prefill side failed
  std::string fallback_reason;
  bool link_finished = false;  // FinishRequest sent: the prefill node may free the KV
  core::Nanos prefill_done_at = 0;
  core::Nanos kv_ready_at = 0;
};

Result<std::unique_ptr<DecodeNode>> DecodeNode::Create(const NodeConfig& config,
                                                std::shared_ptr<transfer::Transport> transport) {
  SG_ASSIGN_OR_RETURN(NodeRuntime rt, BuildNodeRuntime(config, std::move(transport)));
  return std::unique_ptr<DecodeNode>(new DecodeNode(config, std::move(rt)));
}

DecodeNode::DecodeNode(NodeConfig config, NodeRuntime runtime)
    : config_(std::move(config)), rt_(std::move(runtime)), store_(rt_.blocks.get()) {
  requests_ok_ = &metrics_.GetCounter("smartgen_decode_requests_total", "Decode requests by outcome",
                                      {{"outcome", "ok"}});
  requests_failed_ = &metrics_.GetCounter("smartgen_decode_requests_total",
                                          "Decode requests by outcome", {{"outcome", "error"}});
  fallbacks_ = &metrics_.GetCounter("smartgen_decode_fallbacks_total",
                                    "Requests whose prompt was recomputed here after a prefill failure");
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

DecodeNode::~DecodeNode() { Stop(); }

Status DecodeNode::Start() {
  transfer::EndpointCallbacks cb;
  cb.on_control = [this](transfer::PeerId peer, std::uint32_t type, transfer::ConstBytes bytes) {
    OnControl(peer, type, bytes);
  };
  cb.on_peer_down = [this](transfer::PeerId peer, const Status& why) { OnPeerDown(peer, why); };
  SG_ASSIGN_OR_RETURN(endpoint_, transfer::Endpoint::Create(rt_.endpoint_config, rt_.transport,
                                                            /*source=*/nullptr, &store_, cb));
  SG_ASSIGN_OR_RETURN(transfer_address_, endpoint_->Listen(config_.transfer_address));
  engine_ = std::make_unique<DecodeEngine>(rt_.forward.get(),
                                           DecodeEngineOptions{config_.max_batch});
  recompute_forward_ = std::make_unique<model::Forward>(
      *rt_.model, rt_.pool.get(), model::ForwardOptions{rt_.forward->max_context()});

  http_.Post("/internal/decode", [this](const httplib::Request& q, httplib::Response& s) {
    HandleDecode(q, s);
  });
  http_.Post("/internal/cancel", [this](const httplib::Request& q, httplib::Response& s) {
    HandleCancel(q, s);
  });
  http_.Post("/internal/fallback", [this](const httplib::Request& q, httplib::Response& s) {
    auto j = ParseJsonText(q.body);
    if (!j.ok() || !j->contains("request_id") || !(*j)["request_id"].is_number_unsigned()) {
      return ReplyStatus(s, InvalidArgument("expected {{\"request_id\": n}}"));
    }
    if (auto r = FindRequest((*j)["request_id"].get<std::uint64_t>())) {
      std::lock_guard<std::mutex> lock(r->mu);
      if (!r->fallback && r->kv_ready_at == 0) {
        r->fallback = true;
        r->fallback_reason = (*j).value("reason", "the router reported a prefill failure");
      }
    }
    ReplyJson(s, json::object());
  });
  http_.Get("/internal/info", [this](const httplib::Request&, httplib::Response& s) {
    ReplyJson(s, ToJson(Info()));
  });
  http_.Get("/health", [](const httplib::Request&, httplib::Response& s) {
    s.set_content("ok\n", "text/plain");
  });
  http_.Get("/metrics", [this](const httplib::Request&, httplib::Response& s) {
    s.set_content(MetricsText(), "text/plain; version=0.0.4");
  });
  http_.new_task_queue = [] { return new httplib::ThreadPool(256); };
  http_port_ = config_.http_port == 0 ? http_.bind_to_any_port(config_.http_host)
                                      : (http_.bind_to_port(config_.http_host, config_.http_port)
                                             ? config_.http_port
                                             : -1);
  if (http_port_ <= 0) {
    return Unavailable("decode node: cannot bind HTTP on {}:{}", config_.http_host, config_.http_port);
  }
  http_thread_ = std::thread([this] { http_.listen_after_bind(); });
  SG_LOG_INFO("decode", "{}: HTTP {}:{}, KV transfer {}, model {}", config_.name, config_.http_host,
              http_port_, transfer_address_, rt_.model->config().ToString());
  return Status::Ok();
}

void DecodeNode::Stop() {
  if (http_thread_.joinable()) {
    http_.stop();
    http_thread_.join();
  }
  if (engine_) engine_->Stop();
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

std::string DecodeNode::MetricsText() const {
  std::string out = metrics_.Text();
  core::AppendMetricHeader(&out, "smartgen_decode_running", "Sequences in the decode batch", "gauge");
  core::AppendMetricSample(&out, "smartgen_decode_running", {}, engine_ ? engine_->running() : 0);
  core::AppendMetricHeader(&out, "smartgen_decode_waiting", "Sequences waiting for KV", "gauge");
  core::AppendMetricSample(&out, "smartgen_decode_waiting", {}, engine_ ? engine_->waiting() : 0);
  core::AppendMetricHeader(&out, "smartgen_decode_kv_blocks_used", "KV pool blocks in use", "gauge");
  core::AppendMetricSample(&out, "smartgen_decode_kv_blocks_used", {},
                           static_cast<double>(rt_.blocks->used()));
  if (endpoint_) AppendTransferMetrics(endpoint_->GetMetrics(), &out);
  return out;
}

Status DecodeNode::Fetch(Request& r, const std::vector<select::BlockKey>& keys) {
  std::optional<transfer::PeerId> peer;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    peer = r.peer;
  }
  if (!peer) return Unavailable("request {} has no KV peer yet", r.call.request_id);
  const std::uint64_t id = r.call.request_id;
  const std::vector<std::byte> note = EncodeRequested(id, keys);
  endpoint_->SendControl(*peer, static_cast<std::uint32_t>(ControlType::kRequested), note).IgnoreError();
  transfer::TransferRequest t;
  t.direction = transfer::Direction::kPull;
  t.priority = transfer::Priority::kOnDemand;
  t.deadline = core::Deadline::After(r.call.timeout_ms * core::kNanosPerMilli);
  for (const auto& k : keys) {
    t.ranges.push_back({id, static_cast<std::uint32_t>(k.layer), static_cast<std::uint32_t>(k.head),
                        static_cast<std::uint32_t>(k.block), 1});
  }
  SG_ASSIGN_OR_RETURN(transfer::TransferHandle handle, endpoint_->Post(*peer, t));
  endpoint_->Release(handle);  // arrival is tracked by residency
  return Status::Ok();
}

Status DecodeNode::RecomputeMissing(Request& r) {
  // Runs inside a decode step: a second Forward (its own scratch) computes the prompt into a
  // scratch sequence, and every block still absent is copied over.
  const std::uint64_t id = r.call.request_id;
  endpoint_->CancelRequest(id);
  fallbacks_->Increment();
  SG_LOG_WARN("decode", "request {}: KV link lost mid-decode; recomputing the missing KV", id);
  kv::SequenceKv scratch(rt_.blocks.get());
  SG_RETURN_IF_ERROR(recompute_forward_->RunOne(&scratch, r.call.prompt, nullptr));
  kv::Residency& residency = r.entry->residency;
  const kv::KvGeometry& g = rt_.blocks->geometry();
  for (int l = 0; l < g.n_layers; ++l) {
    for (int h = 0; h < g.n_kv_heads; ++h) {
      for (std::int64_t b = 0; b < residency.n_blocks(); ++b) {
        if (residency.present(l, h, b)) continue;
        // Only the prompt's rows: the last block may also hold generated tokens' rows.
        const std::int64_t rows = std::min<std::int64_t>(g.block_tokens, r.entry->n_prompt - b * g.block_tokens);
        std::byte* dst = r.entry->kv.BlockData(l, h, b);
        const std::byte* src = scratch.BlockData(l, h, b);
        std::memcpy(dst, src, rows * g.row_bytes());
        std::memcpy(dst + g.half_block_bytes(), src + g.half_block_bytes(), rows * g.row_bytes());
        residency.MarkPresent(l, h, b);
      }
    }
  }
  std::lock_guard<std::mutex> lock(r.mu);
  r.fallback = true;
  r.fallback_reason = "KV link lost mid-decode; missing KV recomputed";
  return Status::Ok();
}

std::shared_ptr<DecodeNode::Request> DecodeNode::FindRequest(std::uint64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second;
}

void DecodeNode::HandleDecode(const httplib::Request& req, httplib::Response& res) {
  auto body = ParseJsonText(req.body);
  if (!body.ok()) return ReplyStatus(res, body.status());
  auto call = ParseDecodeCall(*body);
  if (!call.ok()) return ReplyStatus(res, call.status());
  const std::int64_t n_prompt = static_cast<std::int64_t>(call->prompt.size());
  if (n_prompt + call->max_tokens > rt_.forward->max_context()) {
    return ReplyStatus(res, OutOfRange("prompt of {} tokens + {} output tokens exceeds the context "
                                       "length {}", n_prompt, call->max_tokens,
                                       rt_.forward->max_context()));
  }
  for (std::int32_t t : call->prompt) {
    if (t < 0 || t >= rt_.model->config().n_vocab) {
      return ReplyStatus(res, InvalidArgument("token id {} is outside the vocabulary", t));
    }
  }
  auto r = std::make_shared<Request>();
  r->call = std::move(*call);
  const std::uint64_t id = r->call.request_id;
  const bool colocated = r->call.mode == TransferMode::kColocated;
  if (colocated) {
    r->local_kv = std::make_unique<kv::SequenceKv>(rt_.blocks.get());
    const Status st = r->local_kv->Reserve(n_prompt + r->call.max_tokens);
    if (!st.ok()) return ReplyStatus(res, st);
  } else {
    auto entry = store_.Add(id, n_prompt, n_prompt + r->call.max_tokens);
    if (!entry.ok()) return ReplyStatus(res, entry.status());
    r->entry = std::move(*entry);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (requests_.count(id)) {
      if (!colocated) store_.Remove(id);
      return ReplyStatus(res, InvalidArgument("request {} is already running here", id));
    }
    requests_.emplace(id, r);
  }
  r->events->Push(ToJson(DecodeEvent::Accepted()).dump());

  if (r->call.mode == TransferMode::kAuto) {
    store_.Remove(id);
    std::lock_guard<std::mutex> lock(mu_);
    requests_.erase(id);
    return ReplyStatus(res, InvalidArgument("mode 'auto' is resolved by the router"));
  }
  if (r->call.mode == TransferMode::kSmartgen) {
    auto options = ParseSmartgenOptions(r->call.options);
    if (!options.ok()) {
      store_.Remove(id);
      std::lock_guard<std::mutex> lock(mu_);
      requests_.erase(id);
      return ReplyStatus(res, options.status());
    }
    Request* raw = r.get();
    r->smartgen = std::make_unique<SmartgenSession>(
        rt_.model->config(), &r->entry->kv, &r->entry->residency, n_prompt, *options,
        select::PickProfile(rt_.profiles, n_prompt),
        [this, raw](const std::vector<select::BlockKey>& keys) { return Fetch(*raw, keys); },
        [this, raw] { return RecomputeMissing(*raw); },
        core::Deadline::After(r->call.timeout_ms * core::kNanosPerMilli));
    r->smartgen->set_on_exact([this, raw] {
      // Every block is here: the prefill node may free its copy and stop streaming.
      std::lock_guard<std::mutex> lock(raw->mu);
      if (raw->peer && !raw->link_finished) {
        endpoint_->FinishRequest(*raw->peer, raw->call.request_id).IgnoreError();
        raw->link_finished = true;
      }
    });
  }

  EngineJob job;
  job.request_id = id;
  job.kv = colocated ? r->local_kv.get() : &r->entry->kv;
  job.attention = r->smartgen.get();
  job.keepalive = r;
  job.prompt = r->call.prompt;
  job.max_tokens = r->call.max_tokens;
  job.sampling = r->call.sampling;
  job.stop_at_eog = r->call.stop_at_eog;
  job.deadline = core::Deadline::After(r->call.timeout_ms * core::kNanosPerMilli);
  if (!colocated) job.ready = [this, raw = r.get()] { return CheckReady(*raw); };
  job.on_token = [raw = r.get()](int index, std::int32_t token) {
    raw->events->Push(ToJson(DecodeEvent::Token(index, token)).dump());
    return !raw->client_gone.load();
  };
  job.on_done = [this, weak = std::weak_ptr<Request>(r)](const Status& st, const std::string& reason,
                                                          const json& stats) {
    if (auto rr = weak.lock()) Finish(rr, st, reason, stats);
  };
  engine_->Submit(std::move(job));
  StreamLines(res, r->events, [this, id, raw = r.get()] {
    raw->client_gone.store(true);
    engine_->Cancel(id);
  });
}

void DecodeNode::HandleCancel(const httplib::Request& req, httplib::Response& res) {
  auto j = ParseJsonText(req.body);
  if (!j.ok() || !j->contains("request_id") || !(*j)["request_id"].is_number_unsigned()) {
    return ReplyStatus(res, InvalidArgument("expected {{\"request_id\": n}}"));
  }
  const std::uint64_t id = (*j)["request_id"].get<std::uint64_t>();
  engine_->Cancel(id);
  endpoint_->CancelRequest(id);
  ReplyJson(res, json::object());
}

Readiness DecodeNode::CheckReady(Request& r) {
  std::lock_guard<std::mutex> lock(r.mu);
  const std::uint64_t id = r.call.request_id;
  if (r.fallback) {
    // Compute the prompt here, into fresh KV: blocks may still be landing in the old one.
    store_.Remove(id);
    endpoint_->CancelRequest(id);
    r.local_kv = std::make_unique<kv::SequenceKv>(rt_.blocks.get());
    const Status st = r.local_kv->Reserve(static_cast<std::int64_t>(r.call.prompt.size()) + r.call.max_tokens);
    if (!st.ok()) return Readiness::Fail(st);
    fallbacks_->Increment();
    SG_LOG_WARN("decode", "request {}: computing the prompt locally ({})", id, r.fallback_reason);
    r.kv_ready_at = core::NowNanos();
    return Readiness::PrefillLocally(r.local_kv.get());
  }
  if (!r.prefill_done) return Readiness::Wait();
  if (r.smartgen) {
    if (!r.smartgen->Ready()) return Readiness::Wait();
    r.kv_ready_at = core::NowNanos();
    return Readiness::Go(r.first_token);
  }
  if (!r.entry->residency.AllPresent()) return Readiness::Wait();
  r.kv_ready_at = core::NowNanos();
  // Every block is here: the prefill node may free its copy now.
  if (r.peer && !r.link_finished) {
    endpoint_->FinishRequest(*r.peer, id).IgnoreError();
    r.link_finished = true;
  }
  return Readiness::Go(r.first_token);
}

void DecodeNode::Finish(const std::shared_ptr<Request>& r, const Status& status,
                        const std::string& reason, const json& engine_stats) {
  const std::uint64_t id = r->call.request_id;
  json stats = engine_stats;
  {
    std::lock_guard<std::mutex> lock(r->mu);
    stats["mode"] = TransferModeName(r->call.mode);
    stats["fallback"] = r->fallback;
    stats["kv_bytes_received"] =
        r->entry ? r->entry->blocks_received.load() * rt_.blocks->geometry().block_bytes() : 0;
    if (r->prefill_done_at) stats["prefill_done_ms"] = core::ToMillis(r->prefill_done_at - r->start);
    // Everything that crossed the link for this request before it finished: blocks kept,
    // blocks dropped as duplicates, and SmartGen's summaries.
    double on_wire = 0;
    if (r->entry) {
      on_wire = static_cast<double>((r->entry->blocks_received.load() + r->entry->blocks_duplicate.load()) *
                                    rt_.blocks->geometry().block_bytes());
      stats["kv_blocks_duplicate"] = r->entry->blocks_duplicate.load();
    }
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
  }
  if (r->call.mode != TransferMode::kColocated) store_.Remove(id);
  if (status.ok()) {
    requests_ok_->Increment();
    r->events->Close(ToJson(DecodeEvent::Done(reason, stats)).dump());
  } else {
    requests_failed_->Increment();
    r->events->Close(ToJson(DecodeEvent::Error(status)).dump());
  }
  std::lock_guard<std::mutex> lock(mu_);
  requests_.erase(id);
}

void DecodeNode::OnControl(transfer::PeerId peer, std::uint32_t type, transfer::ConstBytes bytes) {
  if (type == static_cast<std::uint32_t>(ControlType::kSummaries) ||
      type == static_cast<std::uint32_t>(ControlType::kProactiveManifest)) {
    std::uint64_t id = 0;
    Status st;
    std::span<const std::byte> wire;
    int layer = 0;
    std::vector<select::BlockKey> blocks;
    if (type == static_cast<std::uint32_t>(ControlType::kSummaries)) {
      auto decoded = DecodeSummaries(bytes, &wire);
      st = decoded.status();
      if (decoded.ok()) id = *decoded;
    } else {
      st = DecodeManifest(bytes, &id, &layer, &blocks);
    }
    auto r = st.ok() ? FindRequest(id) : nullptr;
    if (r && r->smartgen) {
      {
        std::lock_guard<std::mutex> lock(r->mu);
        if (!r->peer) r->peer = peer;
      }
      st = type == static_cast<std::uint32_t>(ControlType::kSummaries) ? r->smartgen->AddSummaries(wire)
                                                                       : r->smartgen->AddManifest(layer, blocks);
    }
    if (!st.ok()) SG_LOG_WARN("decode", "bad SmartGen control message {}: {}", type, st.ToString());
    return;
  }
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  auto j = ParseJsonText(text);
  if (!j.ok()) {
    SG_LOG_WARN("decode", "malformed control message {}: {}", type, j.status().ToString());
    return;
  }
  if (type == static_cast<std::uint32_t>(ControlType::kPrefillDone)) {
    auto done = ParsePrefillDone(*j);
    if (!done.ok()) return;
    if (auto r = FindRequest(done->request_id)) {
      std::lock_guard<std::mutex> lock(r->mu);
      r->prefill_done = true;
      r->first_token = done->first_token;
      r->peer = peer;
      r->prefill_done_at = core::NowNanos();
    } else {
      // Finished or cancelled here already: let the prefill node free the KV.
      endpoint_->FinishRequest(peer, done->request_id).IgnoreError();
    }
  } else if (type == static_cast<std::uint32_t>(ControlType::kPrefillFailed)) {
    const std::uint64_t id = j->value("request_id", std::uint64_t{0});
    if (auto r = FindRequest(id)) {
      std::lock_guard<std::mutex> lock(r->mu);
      if (r->kv_ready_at == 0) {
        r->fallback = true;
        r->fallback_reason = "the prefill node failed: " + j->value("message", std::string());
      }
    }
  }
}

void DecodeNode::OnPeerDown(transfer::PeerId peer, const Status& why) {
  std::vector<std::shared_ptr<Request>> affected;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, r] : requests_) affected.push_back(r);
  }
  for (auto& r : affected) {
    std::lock_guard<std::mutex> lock(r->mu);
    if (r->peer != peer) continue;
    if (r->kv_ready_at == 0) {
      r->fallback = true;
      r->fallback_reason = "KV link lost: " + why.ToString();
    } else if (r->smartgen) {
      r->smartgen->OnLinkDown();  // decoding: the session recomputes what is missing
    }
  }
}

}  // namespace smartgen::node
