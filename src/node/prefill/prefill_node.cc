#include "node/prefill/prefill_node.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "core/log.h"
#include "model/sampler.h"
#include "node/common/control_messages.h"
#include "node/prefill/prefill_job.h"
#include "node/common/window_transfer.h"
#include "node/common/node_metrics.h"
#include "node/common/transfer_metrics.h"
#include "node/prefill/smartgen_prefill.h"
#include "transfer/int8_wire.h"
#include "select/path_sizing.h"

namespace smartgen::node {

using nlohmann::json;


Result<std::unique_ptr<PrefillNode>> PrefillNode::Create(const NodeConfig& config,
                                                std::shared_ptr<transfer::Transport> transport) {
  SG_ASSIGN_OR_RETURN(NodeRuntime rt, BuildNodeRuntime(config, std::move(transport)));
  return std::unique_ptr<PrefillNode>(new PrefillNode(config, std::move(rt)));
}

PrefillNode::PrefillNode(NodeConfig config, NodeRuntime runtime)
    : config_(std::move(config)),
      rt_(std::move(runtime)),
      estimate_(rt_.model->config()),
      store_(rt_.blocks.get()),
      auth_(config_.token) {
  auth_refused_ = &metrics_.GetCounter("smartgen_node_auth_refused_total",
                                       "Control-plane calls refused: unsigned, wrong token, stale or replayed");
  prefills_ok_ = &metrics_.GetCounter("smartgen_prefill_requests_total", "Prefills by outcome",
                                      {{"outcome", "ok"}});
  prefills_failed_ = &metrics_.GetCounter("smartgen_prefill_requests_total", "Prefills by outcome",
                                          {{"outcome", "error"}});
  prompt_tokens_ = &metrics_.GetCounter("smartgen_prefill_prompt_tokens_total", "Prompt tokens computed");
  bytes_pushed_ = &metrics_.GetCounter("smartgen_prefill_kv_bytes_posted_total",
                                       "KV block bytes posted for pushing to decode nodes");
  prefill_seconds_ = &metrics_.GetHistogram("smartgen_prefill_seconds", "Prefill compute time",
                                            core::LatencyBuckets());
  queue_depth_ = &metrics_.GetGauge("smartgen_prefill_queue_depth", "Prefills waiting to run");
  bad_control_ = &metrics_.GetCounter("smartgen_prefill_control_rejected_total",
                                      "Malformed or unexpected control messages from peers");
  call_refused_ = &metrics_.GetCounter("smartgen_node_call_refused_total",
                                       "Signed calls about a request refused: the caller is not the one "
                                       "that registered it");
}

PrefillNode::~PrefillNode() { Stop(); }

Status PrefillNode::Warmup(std::int64_t n_tokens) {
  n_tokens = std::min<std::int64_t>(n_tokens, rt_.forward->max_context() - 1);
  const int vocab = rt_.model->config().n_vocab;
  if (n_tokens <= 0 || vocab <= 0) return Status::Ok();
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(n_tokens));
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>((i * 7919 + 13) % vocab);
  kv::SequenceKv seq(rt_.blocks.get());
  core::Stopwatch watch;
  SG_RETURN_IF_ERROR(rt_.forward->RunOne(&seq, tokens, nullptr).WithContext("start-up prefill"));
  estimate_.Record(n_tokens, watch.ElapsedSeconds());
  SG_LOG_INFO("prefill", "{}: start-up prefill of {} tokens took {:.0f} ms", config_.name, n_tokens,
              watch.ElapsedMillis());
  return Status::Ok();
}

Status PrefillNode::Start() {
  if (config_.warmup_tokens > 0) SG_RETURN_IF_ERROR(Warmup(config_.warmup_tokens));
  transfer::EndpointCallbacks cb;
  // The endpoint calls back into this node until it is destroyed, which Stop() does before
  // anything these callbacks touch goes.
  cb.on_control = [this](transfer::PeerId peer, std::uint32_t type, transfer::ConstBytes bytes) {
    OnControl(peer, type, bytes);
  };
  cb.on_peer_down = [this](transfer::PeerId peer, const Status& why) { OnPeerDown(peer, why); };
  SG_ASSIGN_OR_RETURN(endpoint_, transfer::Endpoint::Create(rt_.endpoint_config, rt_.transport,
                                                            &store_, /*sink=*/nullptr, cb));
  speculative_ = std::make_unique<SpeculativeSender>(
      endpoint_.get(), rt_.blocks->geometry().block_bytes(), config_.link_gbps * 1e9 / 8);
  // Runs on the endpoint's threads: the sender outlives the endpoint (see Stop).
  store_.set_on_release([this](std::uint64_t id) {
    speculative_->Remove(id);
    {
      std::lock_guard<std::mutex> lock(mu_);
      owners_.erase(id);
    }
    std::lock_guard<std::mutex> lock(active_mu_);
    active_.erase(id);
  });
  worker_ = std::thread([this] { Worker(); });
  SG_ASSIGN_OR_RETURN(http_, MakeControlServer(config_.control_tls));
  http_->Post("/internal/prefill", Authenticated(&auth_, auth_refused_, [this](const httplib::Request& q, httplib::Response& s) {
    HandlePrefill(q, s);
  }));
  http_->Post("/internal/cancel", Authenticated(&auth_, auth_refused_, [this](const httplib::Request& q, httplib::Response& s) {
    HandleCancel(q, s);
  }));
  http_->Get("/internal/info", Authenticated(&auth_, auth_refused_, [this](const httplib::Request&, httplib::Response& s) {
    ReplyJson(s, ToJson(Info()));
  }));
  SG_ASSIGN_OR_RETURN(http_port_, StartNodeHttp(*http_, config_.http_host, config_.http_port,
                                                 [this] { return MetricsText(); }, &http_thread_));
  SG_LOG_INFO("prefill", "{}: HTTP{} {}:{}, link {} Gbit/s, model {}", config_.name,
              config_.control_tls.enabled() ? "S (mutual TLS)" : "", config_.http_host,
              http_port_, config_.link_gbps, rt_.model->config().ToString());
  return Status::Ok();
}

void PrefillNode::Stop() {
  if (http_thread_.joinable()) {
    http_->stop();
    http_thread_.join();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  // The sender's thread posts to the endpoint: stop it first. The endpoint's shutdown releases
  // every lease, which calls the sender's Remove: the sender object goes last.
  if (speculative_) speculative_->Stop();
  {
    // The endpoint's shutdown reports its peers down, and unique_ptr::reset clears endpoint_
    // before the endpoint is gone: from here OnPeerDown leaves it alone.
    std::lock_guard<std::mutex> lock(peer_down_mu_);
    stopping_ = true;
  }
  endpoint_.reset();
  speculative_.reset();
}

void PrefillNode::OnPeerDown(transfer::PeerId peer, const Status& why) {
  // The decode node is gone: nobody will finish these requests, so free their KV now rather
  // than at lease expiry.
  std::vector<std::uint64_t> ids;
  {
    std::lock_guard<std::mutex> lock(active_mu_);
    for (const auto& [id, p] : active_) {
      if (p == peer) ids.push_back(id);
    }
  }
  if (!ids.empty()) {
    SG_LOG_WARN("prefill", "{}: KV peer down ({}); cancelling {} request(s)", config_.name,
                why.ToString(), ids.size());
  }
  std::lock_guard<std::mutex> lock(peer_down_mu_);
  if (stopping_) return;  // the endpoint is closing: it ends every request itself
  for (std::uint64_t id : ids) endpoint_->CancelRequest(id);
}

void PrefillNode::OnControl(transfer::PeerId peer, std::uint32_t type, transfer::ConstBytes bytes) {
  auto m = DecodeControl(type, bytes);
  if (!m.ok() || m->type != ControlType::kRequested) {
    bad_control_->Increment();
    SG_LOG_WARN("prefill", "{}: rejected a control message of type {} from peer {}: {}", config_.name,
                type, peer.value, m.ok() ? "not expected here" : m.status().ToString());
    return;
  }
  speculative_->MarkRequested(m->request_id, m->blocks);
}

Status PrefillNode::SendControl(transfer::PeerId peer, std::span<const std::byte> bytes,
                                ControlType type) {
  return endpoint_->SendControl(peer, static_cast<std::uint32_t>(type), bytes);
}

Status PrefillNode::SendControl(transfer::PeerId peer, const ControlMessage& m) {
  return SendControl(peer, EncodeControl(m), m.type);
}

Status PrefillNode::Push(transfer::PeerId peer, std::vector<transfer::BlockRange> ranges,
                         transfer::Priority priority, core::Deadline deadline,
                         transfer::WireFormat wire) {
  if (ranges.empty()) return Status::Ok();
  transfer::TransferRequest t;
  t.direction = transfer::Direction::kPush;
  t.priority = priority;
  t.deadline = deadline;
  t.wire = wire;
  std::int64_t blocks = 0;
  for (const auto& r : ranges) blocks += r.n_blocks;
  t.ranges = std::move(ranges);
  SG_ASSIGN_OR_RETURN(transfer::TransferHandle handle, endpoint_->Post(peer, t));
  endpoint_->Release(handle);  // nobody polls it; the decode node tracks arrival itself
  bytes_pushed_->Increment(static_cast<double>(blocks) * WireBlockBytes(wire));
  return Status::Ok();
}

double PrefillNode::WireBlockBytes(transfer::WireFormat wire) const {
  return wire == transfer::WireFormat::kInt8
             ? static_cast<double>(
                   transfer::Int8BlockBytes(ToTransferGeometry(rt_.blocks->geometry())))
             : static_cast<double>(rt_.blocks->geometry().block_bytes());
}

double PrefillNode::LinkRate(transfer::PeerId peer) const {
  const double measured = endpoint_->LinkBytesPerSecond(peer);
  return measured > 0 ? measured : config_.link_gbps * 1e9 / 8;
}

NodeInfo PrefillNode::Info() const {
  NodeInfo i;
  i.role = "prefill";
  i.name = config_.name;
  i.model_fingerprint = rt_.model->fingerprint();
  i.model_name = rt_.model->config().name;
  i.context_length = rt_.forward->max_context();
  i.block_tokens = config_.block_tokens;
  i.kv_dtype = config_.kv_dtype;
  i.link_gbps = config_.link_gbps;
  return i;
}

std::string PrefillNode::MetricsText() const {
  std::string out = metrics_.Text();
  if (speculative_) {
    core::AppendMetricHeader(&out, "smartgen_prefill_speculative_blocks_total",
                             "SmartGen speculative blocks sent, or cancelled when the request ended first",
                             "counter");
    core::AppendMetricSample(&out, "smartgen_prefill_speculative_blocks_total", {{"outcome", "sent"}},
                             static_cast<double>(speculative_->blocks_sent()));
    core::AppendMetricSample(&out, "smartgen_prefill_speculative_blocks_total", {{"outcome", "cancelled"}},
                             static_cast<double>(speculative_->blocks_cancelled()));
  }
  if (endpoint_) AppendTransferMetrics(endpoint_->GetMetrics(), &out);
  AppendNodeMetrics(&out, "smartgen_prefill", "prefill", rt_.model->config().name, *rt_.blocks);
  return out;
}

Result<transfer::PeerId> PrefillNode::PeerFor(const std::string& address, core::Deadline deadline) {
  std::lock_guard<std::mutex> lock(peers_mu_);
  auto it = peers_.find(address);
  if (it != peers_.end() && endpoint_->IsConnected(it->second)) return it->second;
  SG_ASSIGN_OR_RETURN(transfer::PeerId peer, endpoint_->Connect(address, deadline));
  peers_[address] = peer;
  return peer;
}

Status PrefillNode::PushLayers(transfer::PeerId peer, std::uint64_t request_id, int first_layer,
                               int end_layer, const select::NeededBlocks& needed,
                               core::Deadline deadline) {
  std::vector<transfer::BlockRange> ranges;
  const int n_heads = rt_.model->config().n_kv_heads;
  for (int l = first_layer; l < end_layer; ++l) {
    // A window layer's blocks before its window are never needed (select/needed_blocks.h).
    const std::int32_t first = needed.FirstBlock(l);
    if (first >= needed.grid.n_blocks) continue;
    for (int h = 0; h < n_heads; ++h) {
      ranges.emplace_back(request_id,
                          kv::BlockRange{l, h, first, needed.grid.n_blocks - first});
    }
  }
  return Push(peer, std::move(ranges), transfer::Priority::kProactive, deadline);
}

Result<PrefillReply> PrefillNode::RunPrefill(const PrefillCall& call) {
  const core::Deadline deadline = core::Deadline::After(call.timeout_ms * core::kNanosPerMilli);
  const std::uint64_t id = call.request_id.link_handle();
  if (call.mode == TransferMode::kColocated || call.mode == TransferMode::kAuto) {
    return InvalidArgument("mode '{}' is not a prefill node mode (the router resolves auto)",
                           TransferModeName(call.mode));
  }
  if (static_cast<std::int64_t>(call.spec.prompt.size()) >= rt_.forward->max_context()) {
    return OutOfRange("prompt of {} tokens does not fit the context length {}", call.spec.prompt.size(),
                      rt_.forward->max_context());
  }
  // What the decode needs of the prompt (sliding-window layers: their window), worked out the
  // same way on the decode node.
  SG_ASSIGN_OR_RETURN(const select::NeededBlocks needed,
                      RequestNeededBlocks(rt_.model->config(), rt_.blocks->geometry().block_tokens, call.spec));
  select::SmartgenOptions sg_options;
  if (call.mode == TransferMode::kSmartgen) {
    SG_ASSIGN_OR_RETURN(sg_options, select::ParseSmartgenOptions(call.spec.options));
  }
  SG_ASSIGN_OR_RETURN(transfer::PeerId peer, PeerFor(call.decode_address, deadline));
  SG_ASSIGN_OR_RETURN(std::shared_ptr<PrefillKvStore::Entry> entry, store_.Add(id));
  {
    std::lock_guard<std::mutex> lock(active_mu_);
    active_[id] = peer;
  }
  // Every way out below that is not a success ends the request on both sides: the decode node
  // is told to compute the prompt itself, and the KV and its lease are freed now.
  bool succeeded = false;
  Status failure;
  struct Cleanup {
    PrefillNode* node;
    std::uint64_t id;
    transfer::PeerId peer;
    const bool& succeeded;
    const Status& failure;
    ~Cleanup() {
      if (succeeded) return;
      node->prefills_failed_->Increment();
      node->SendControl(peer, ControlMessage::PrefillFailed(id, failure)).IgnoreError();
      node->endpoint_->CancelRequest(id);
      node->store_.Remove(id);
      std::lock_guard<std::mutex> lock(node->active_mu_);
      node->active_.erase(id);
    }
  } cleanup{this, id, peer, succeeded, failure};
  auto fail = [&](Status st) {
    failure = st;
    return st;
  };

  // The lease keeps the KV until the decode node is done with it (or the lease expires).
  if (Status st = endpoint_->HoldLease(id); !st.ok()) return fail(st);
  // The decode node ties the request to this link from here on: if the link dies, it knows.
  if (Status st = SendControl(peer, ControlMessage::PrefillStarted(call.request_id, call.kv_ticket)); !st.ok()) return fail(st);

  const std::int64_t n_prompt = static_cast<std::int64_t>(call.spec.prompt.size());
  const kv::KvGeometry& geometry = rt_.blocks->geometry();
  const std::int64_t n_blocks = geometry.BlocksFor(n_prompt);
  const std::int64_t full_kv_bytes =
      n_blocks * static_cast<std::int64_t>(geometry.block_bytes()) * geometry.n_layers * geometry.n_kv_heads;
  std::unique_ptr<SmartgenPrefill> sg;
  if (call.mode == TransferMode::kSmartgen) {
    // The proactive set is what the link carries while the prefill runs (or a fixed R): the
    // rate the endpoint measured on this link, the configured one until it has measured.
    std::int64_t budget = select::ProactiveBudgetFor(sg_options, full_kv_bytes, LinkRate(peer),
                                                     estimate_.Seconds(n_prompt));
    if (sg_options.int8_wire && budget < full_kv_bytes) {
      // The budget is in native block bytes; int8 copies fit more blocks into the same bytes.
      budget = std::min<std::int64_t>(
          full_kv_bytes,
          static_cast<std::int64_t>(static_cast<double>(budget) * geometry.block_bytes() /
                                    WireBlockBytes(transfer::WireFormat::kInt8)));
    }
    sg = std::make_unique<SmartgenPrefill>(id, rt_.model->config(), geometry, n_prompt, sg_options,
                                           select::PickProfile(rt_.profiles, n_prompt), budget,
                                           needed, rt_.pool.get());
  }

  std::vector<float> logits;
  model::ForwardChunk chunk;
  chunk.kv = &entry->kv;
  chunk.tokens = call.spec.prompt;
  chunk.logits = &logits;
  Status push_status;
  if (sg) {
    chunk.on_layer_q = [&](int layer, const float* q, std::int64_t n) { sg->OnLayerQuery(layer, q, n); };
    chunk.query_rows = sg_options.query_window;  // all OnLayerQuery keeps
  }
  // Full mode sends nothing until the prefill ends; a prefill longer than the decode node's
  // kv_progress deadline (10 s: 4096 tokens of a 135M model on 2 busy cores) would make it give
  // up and compute the prompt itself. A repeated PrefillStarted, at most once a second, says
  // the prefill is still running (the decode node counts any KV message as progress).
  core::Nanos last_signal = core::NowNanos();
  chunk.on_layer_kv = [&](int layer, std::int64_t, std::int64_t) {
    store_.MarkLayerDone(id, layer);
    if (!push_status.ok()) return;
    if (call.mode == TransferMode::kFull) {
      if (const core::Nanos now = core::NowNanos(); now - last_signal >= core::Seconds(1)) {
        last_signal = now;
        push_status = SendControl(peer, ControlMessage::PrefillStarted(call.request_id, call.kv_ticket));
      }
    } else if (call.mode == TransferMode::kLayerwise) {
      push_status = PushLayers(peer, id, layer, layer + 1, needed, deadline);
    } else if (sg) {
      SmartgenPrefill::LayerOutput out = sg->OnLayerDone(layer, entry->kv);
      if (!out.summaries.empty()) push_status = SendControl(peer, out.summaries, ControlType::kSummaries);
      if (push_status.ok()) push_status = SendControl(peer, out.manifest, ControlType::kProactiveManifest);
      if (push_status.ok()) {
        push_status = Push(peer, std::move(out.push), transfer::Priority::kProactive, deadline,
                           sg->push_wire());
      }
    }
  };
  core::Stopwatch watch;
  model::ForwardChunk chunks[1] = {chunk};
  if (Status st = rt_.forward->Run(chunks); !st.ok()) return fail(st);
  const double prefill_ms = watch.ElapsedMillis();
  if (!push_status.ok()) return fail(push_status);
  if (call.mode == TransferMode::kFull) {
    if (Status st = PushLayers(peer, id, 0, rt_.model->config().n_layers, needed, deadline); !st.ok()) {
      return fail(st);
    }
  }
  model::Sampler sampler(call.spec.sampling, 0);
  sampler.SetPrompt(call.spec.prompt);  // repetition_penalty sees the prompt
  model::TokenLogprobs first_logprobs;
  const std::int32_t first = sampler.Sample(logits, &first_logprobs);
  double first_step_ms = 0;
  if (sg && sg_options.first_step) {
    auto ran = RunFirstStep(peer, id, call.spec.Emitted(0, first), *sg, entry->kv, deadline);
    if (!ran.ok()) return fail(ran.status());
    first_step_ms = *ran;
  }
  if (call.spec.n > 1) {
    // Token 1 of every other choice, from the same logits with its own seed (seed + i): the
    // decode node forks the prompt's KV into each choice and continues its draws.
    std::vector<std::int32_t> tokens;
    std::vector<model::TokenLogprobs> logprobs;
    for (int i = 1; i < call.spec.n; ++i) {
      model::Sampler choice_sampler(call.spec.ChoiceSampling(i), 0);
      choice_sampler.SetPrompt(call.spec.prompt);
      model::TokenLogprobs lp;
      tokens.push_back(choice_sampler.Sample(logits, &lp));
      if (call.spec.sampling.logprobs >= 0) logprobs.push_back(std::move(lp));
    }
    if (Status st = SendControl(
            peer, ControlMessage::ChoiceTokens(id, std::move(tokens), std::move(logprobs)));
        !st.ok()) {
      return fail(st);
    }
  }
  const ControlMessage prefill_done = ControlMessage::PrefillDone(
      id, first, n_prompt, call.spec.sampling.logprobs >= 0 ? &first_logprobs : nullptr);
  if (Status st = SendControl(peer, prefill_done); !st.ok()) {
    return fail(st);
  }
  succeeded = true;
  if (sg && sg_options.speculative) {
    speculative_->Add(id, peer, sg->TakeSpeculative(), sg->SpeculativeSkip(), sg_options.pacing,
                      deadline);
  }
  estimate_.Record(n_prompt, prefill_ms / 1e3);
  prefills_ok_->Increment();
  prompt_tokens_->Increment(static_cast<double>(call.spec.prompt.size()));
  prefill_seconds_->Observe(prefill_ms / 1e3);
  PrefillReply reply;
  reply.first_token = first;
  reply.prefill_ms = prefill_ms;
  reply.stats = {{"kv_bytes", full_kv_bytes},
                 {"kv_bytes_needed", needed.Total() * static_cast<std::int64_t>(geometry.block_bytes())},
                 {"window_layers", std::count(needed.window_layer.begin(), needed.window_layer.end(), 1)},
                 {"mode", TransferModeName(call.mode)},
                 {"link_bytes_per_s", LinkRate(peer)},
                 {"link_measured", endpoint_->LinkBytesPerSecond(peer) > 0}};
  if (sg) {
    reply.stats["smartgen"] = sg->Stats();
    reply.stats["smartgen"]["first_step_ms"] = first_step_ms;
  }
  return reply;
}

}  // namespace smartgen::node
