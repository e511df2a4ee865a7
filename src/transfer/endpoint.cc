// The Endpoint API: validation, then state changes under the core's lock. The threads that do
// the work are in endpoint_sender.cc, endpoint_receiver.cc and endpoint_lifecycle.cc.
#include "transfer/endpoint.h"

#include <algorithm>
#include <limits>

#include "core/log.h"
#include "transfer/endpoint_core.h"

namespace smartgen::transfer {

// --- Endpoint: forwards to Core ---

Endpoint::Endpoint(std::unique_ptr<Core> core) : core_(std::move(core)) {}

Endpoint::~Endpoint() { core_->Shutdown(); }

Result<std::unique_ptr<Endpoint>> Endpoint::Create(EndpointConfig config,
                                                   std::shared_ptr<Transport> transport,
                                                   BlockSource* source, BlockSink* sink,
                                                   EndpointCallbacks callbacks) {
  if (!transport) return InvalidArgument("endpoint needs a transport");
  const KvGeometry& g = config.handshake.geometry;
  if (g.n_layers == 0 || g.n_kv_heads == 0 || g.head_dim == 0 || g.block_tokens == 0 ||
      DTypeSize(g.dtype) == 0) {
    return InvalidArgument("endpoint KV geometry has a zero dimension or unknown dtype");
  }
  if (g.block_bytes() > kMaxFramePayload) {
    return InvalidArgument("a block of {} bytes exceeds the frame limit", g.block_bytes());
  }
  if (config.link.gbps < 0) return InvalidArgument("link.gbps must be >= 0");
  if (config.heartbeat_interval <= 0 || config.heartbeat_timeout <= config.heartbeat_interval) {
    return InvalidArgument("heartbeat_timeout must exceed heartbeat_interval > 0");
  }
  if (config.max_attempts < 1) return InvalidArgument("max_attempts must be >= 1");
  auto core = std::make_unique<Core>(std::move(config), std::move(transport), source, sink,
                                     std::move(callbacks));
  core->Start();
  return std::unique_ptr<Endpoint>(new Endpoint(std::move(core)));
}

const EndpointConfig& Endpoint::config() const { return core_->config(); }
const TransportCaps& Endpoint::transport_caps() const { return core_->caps(); }
Result<std::string> Endpoint::Listen(std::string_view a) { return core_->Listen(a); }
Result<PeerId> Endpoint::Accept(Deadline d) { return core_->Accept(d); }
Result<PeerId> Endpoint::Connect(std::string_view a, Deadline d) { return core_->Connect(a, d); }
void Endpoint::Disconnect(PeerId p) { core_->Disconnect(p); }
bool Endpoint::IsConnected(PeerId p) const { return core_->IsConnected(p); }
double Endpoint::LinkBytesPerSecond(PeerId p) const { return core_->LinkBytesPerSecond(p); }
Result<TransferHandle> Endpoint::Post(PeerId p, const TransferRequest& r) {
  return core_->Post(p, r);
}
Result<TransferProgress> Endpoint::Poll(TransferHandle h) const { return core_->Poll(h); }
Status Endpoint::Wait(TransferHandle h, Deadline d) { return core_->Wait(h, d); }
Status Endpoint::Cancel(TransferHandle h) { return core_->Cancel(h); }
void Endpoint::Release(TransferHandle h) { core_->Release(h); }
void Endpoint::CancelRequest(std::uint64_t id) { core_->CancelRequest(id); }
Status Endpoint::FinishRequest(PeerId p, std::uint64_t id) { return core_->FinishRequest(p, id); }
Status Endpoint::HoldLease(std::uint64_t id, core::Nanos ttl) { return core_->HoldLease(id, ttl); }
void Endpoint::ReleaseLease(std::uint64_t id) { core_->ReleaseLease(id); }
void Endpoint::NotifySourceReady() { core_->NotifySourceReady(); }
Status Endpoint::SendControl(PeerId p, std::uint32_t type, ConstBytes bytes) {
  return core_->SendControl(p, type, bytes);
}
Metrics Endpoint::GetMetrics() const { return core_->GetMetrics(); }

// --- Core: the API ---

Result<std::string> Endpoint::Core::Listen(std::string_view address) {
  {
    Lock lock(mu_);
    if (shutting_down_) return Cancelled("endpoint is shutting down");
    if (listener_) return FailedPrecondition("endpoint already listens on {}", listener_->address());
  }
  SG_ASSIGN_OR_RETURN(auto listener, transport_->Listen(address));
  std::string bound = listener->address();
  Lock lock(mu_);
  if (listener_) return FailedPrecondition("endpoint already listens on {}", listener_->address());
  listener_ = std::move(listener);
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  SG_LOG_INFO("transfer", "{}: listening on {} ({})", config_.name, bound, caps().name);
  return bound;
}

Result<PeerId> Endpoint::Core::Accept(Deadline deadline) {
  Lock lock(mu_);
  while (accepted_.empty()) {
    if (shutting_down_) return Cancelled("endpoint is shutting down");
    const core::Nanos left = deadline.Remaining();
    if (left <= 0) return DeadlineExceeded("no peer connected in time");
    accept_cv_.wait_for(lock, std::chrono::nanoseconds(std::min(left, core::Seconds(1))));
  }
  const PeerId peer = accepted_.front();
  accepted_.pop_front();
  return peer;
}

Result<PeerId> Endpoint::Core::Connect(std::string_view address, Deadline deadline) {
  SG_ASSIGN_OR_RETURN(auto connection, transport_->Connect(address, deadline));
  const Deadline handshake =
      Earlier(deadline, Deadline::After(config_.handshake_timeout));
  Status st = RunHandshake(*connection, HandshakeRole::kConnector, config_.handshake,
                           config_.token, handshake);
  if (!st.ok()) {
    Lock lock(mu_);
    ++counters_.handshakes_refused;
    return st.WithContext(fmt::format("handshake with {}", address));
  }
  return AddSession(std::move(connection));
}

void Endpoint::Core::Disconnect(PeerId peer) {
  Lock lock(mu_);
  auto it = sessions_.find(peer.value);
  if (it == sessions_.end() || it->second->down) return;
  const std::shared_ptr<Session> s = it->second;  // the housekeeper may reap it while we wait
  SayGoodbyeLocked(*s);
  const Deadline limit = Deadline::After(core::Millis(500));
  while (!s->down && !s->goodbye_sent && !limit.Expired()) {
    ops_cv_.wait_for(lock, std::chrono::milliseconds(10));
  }
  MarkDownLocked(*s, Cancelled("disconnected locally"));
}

bool Endpoint::Core::IsConnected(PeerId peer) const {
  Lock lock(mu_);
  const Session* s = FindSessionLocked(peer);
  return s != nullptr && !s->down;
}

double Endpoint::Core::LinkBytesPerSecond(PeerId peer) const {
  Lock lock(mu_);
  const Session* s = FindSessionLocked(peer);
  if (s == nullptr) return 0.0;
  const double sent = s->link.bytes_per_second();
  // The engine shapes the link: the rate is its limiter's, which the estimate can only
  // overshoot (frames sent at once from a full bucket count as fast ones).
  if (config_.link.gbps > 0) return sent > 0 ? std::min(sent, config_.link.gbps * 1e9 / 8) : 0.0;
  // A real link: the kernel's delivery rate (from ACKs) when it has one. The sender-side
  // estimate counts bytes the socket buffer took at once, and reads high after bursts (a
  // 20 Mbit/s tc link measured as 0.07-17 Gbit/s); the lower of the two is kept.
  if (const double kernel = s->connection->DeliveryBytesPerSecond(); kernel > 0) {
    s->delivery_bytes_per_second = kernel;
  }
  const double kernel = s->delivery_bytes_per_second;
  if (kernel <= 0) return sent;
  return sent > 0 ? std::min(sent, kernel) : kernel;
}

Status Endpoint::Core::CheckPeerLocked(PeerId peer, const Session* s) const {
  if (s == nullptr) {
    // Ids are never reused: a known id without a session is a peer that has gone.
    if (peer.value != 0 && peer.value < next_peer_) return Unavailable("peer {} is gone", peer.value);
    return NotFound("no peer {}", peer.value);
  }
  if (s->down) return Unavailable("peer {} is down: {}", peer.value, s->down_reason.ToString());
  return Status::Ok();
}

Status Endpoint::Core::ValidateRange(const BlockRange& r) const {
  const KvGeometry& g = config_.handshake.geometry;
  if (r.n_blocks <= 0) return InvalidArgument("empty block range ({})", ToString(r));
  if (r.layer < 0 || r.kv_head < 0 || r.first_block < 0 ||
      static_cast<std::uint32_t>(r.layer) >= g.n_layers ||
      static_cast<std::uint32_t>(r.kv_head) >= g.n_kv_heads) {
    return InvalidArgument("block range {} is outside the geometry ({} layers, {} KV heads)",
                           ToString(r), g.n_layers, g.n_kv_heads);
  }
  if (r.first_block > std::numeric_limits<std::int32_t>::max() - r.n_blocks) {
    return InvalidArgument("block range {} overflows", ToString(r));
  }
  return Status::Ok();
}

Result<TransferHandle> Endpoint::Core::Post(PeerId peer, const TransferRequest& request) {
  if (request.ranges.empty()) return InvalidArgument("transfer names no blocks");
  for (const BlockRange& r : request.ranges) SG_RETURN_IF_ERROR(ValidateRange(r));
  if (request.direction == Direction::kPush && source_ == nullptr) {
    return FailedPrecondition("push needs a BlockSource");
  }
  if (request.direction == Direction::kPull && sink_ == nullptr) {
    return FailedPrecondition("pull needs a BlockSink");
  }
  std::vector<BlockRange> ranges = NormalizeRanges(request.ranges);
  const core::Nanos now = core::NowNanos();
  const Deadline deadline = request.deadline.is_never()
                                ? Deadline::At(now + config_.default_timeout)
                                : request.deadline;

  Lock lock(mu_);
  if (shutting_down_) return Cancelled("endpoint is shutting down");
  Session* s = FindSessionLocked(peer);
  SG_RETURN_IF_ERROR(CheckPeerLocked(peer, s));
  std::vector<std::uint32_t> generations;
  generations.reserve(ranges.size());
  for (const BlockRange& r : ranges) {
    if (request.direction == Direction::kPush) {
      if (auto reason = leases_.Released(r.request_id)) {
        return FailedPrecondition("request {} was released ({}); it cannot be pushed",
                                  r.request_id, ReleaseReasonName(*reason));
      }
    }
    generations.push_back(GenerationLocked(r.request_id));
  }
  if (request.direction == Direction::kPush) {
    for (const BlockRange& r : ranges) {
      [[maybe_unused]] const bool held = leases_.Hold(r.request_id, 0, now);
    }
  }
  const std::uint64_t id = next_op_++;
  auto op = std::make_unique<TransferOp>(id, peer, request.direction, request.priority, ranges,
                                         generations, deadline, now);
  if (request.direction == Direction::kPush) {
    s->data.Put(id, false, request.priority, op->AllEntries());
    s->send_cv.notify_one();
  } else {
    QueuePullLocked(*s, *op, op->AllEntries(), /*replace=*/true);
  }
  ops_.emplace(id, std::move(op));
  ++ops_active_;
  return TransferHandle{id};
}

Result<TransferProgress> Endpoint::Core::Poll(TransferHandle handle) const {
  Lock lock(mu_);
  const TransferOp* op = FindOpLocked(handle.value);
  if (op == nullptr) return NotFound("no transfer {}", handle.value);
  return op->Snapshot(block_bytes_);
}

Status Endpoint::Core::Wait(TransferHandle handle, Deadline deadline) {
  Lock lock(mu_);
  for (;;) {
    const TransferOp* op = FindOpLocked(handle.value);
    if (op == nullptr) return NotFound("no transfer {}", handle.value);
    if (!op->in_progress()) return op->status();
    const core::Nanos left = deadline.Remaining();
    if (left <= 0) {
      return DeadlineExceeded("transfer {} still in progress", handle.value);
    }
    ops_cv_.wait_for(lock, std::chrono::nanoseconds(std::min(left, core::Seconds(1))));
  }
}

Status Endpoint::Core::Cancel(TransferHandle handle) {
  Lock lock(mu_);
  TransferOp* op = FindOpLocked(handle.value);
  if (op == nullptr) return NotFound("no transfer {}", handle.value);
  FinishOpLocked(*op, TransferState::kCancelled, Cancelled("transfer cancelled by the caller"));
  return Status::Ok();
}

void Endpoint::Core::Release(TransferHandle handle) {
  Lock lock(mu_);
  auto it = ops_.find(handle.value);
  if (it != ops_.end() && !it->second->in_progress()) ops_.erase(it);
}

void Endpoint::Core::CancelRequest(std::uint64_t request_id) {
  Lock lock(mu_);
  EndRequestLocked(request_id, 0, ReleaseReason::kCancelled, /*tell_peers=*/true);
}

Status Endpoint::Core::FinishRequest(PeerId peer, std::uint64_t request_id) {
  Lock lock(mu_);
  Session* s = FindSessionLocked(peer);
  SG_RETURN_IF_ERROR(CheckPeerLocked(peer, s));
  // Local transfers of the request are over too; bump the generation so stragglers are stale.
  EndRequestLocked(request_id, 0, ReleaseReason::kCompleted, /*tell_peers=*/false);
  FrameHeader h;
  h.type = FrameType::kFinishRequest;
  h.request_id = request_id;
  h.generation = GenerationLocked(request_id);
  QueueControlLocked(*s, MakeFrame(h));
  return Status::Ok();
}

Status Endpoint::Core::HoldLease(std::uint64_t request_id, core::Nanos ttl) {
  Lock lock(mu_);
  if (!leases_.Hold(request_id, ttl, core::NowNanos())) {
    return FailedPrecondition("request {} was already released", request_id);
  }
  return Status::Ok();
}

void Endpoint::Core::ReleaseLease(std::uint64_t request_id) {
  Lock lock(mu_);
  ApplyReleaseLocked(leases_.Release(request_id, ReleaseReason::kCompleted, core::NowNanos()));
  for (auto& [id, s] : sessions_) s->data.RemoveRequest(request_id);
}

void Endpoint::Core::NotifySourceReady() {
  Lock lock(mu_);
  for (auto& [id, s] : sessions_) {
    s->data.Unpark();
    s->send_cv.notify_one();
  }
}

Status Endpoint::Core::SendControl(PeerId peer, std::uint32_t type, ConstBytes bytes) {
  if (bytes.size() > kMaxFramePayload) {
    return InvalidArgument("control message of {} bytes exceeds {}", bytes.size(), kMaxFramePayload);
  }
  Lock lock(mu_);
  Session* s = FindSessionLocked(peer);
  SG_RETURN_IF_ERROR(CheckPeerLocked(peer, s));
  FrameHeader h;
  h.type = FrameType::kControl;
  h.aux = type;
  QueueControlLocked(*s, MakeFrame(h, std::vector<std::byte>(bytes.begin(), bytes.end())));
  return Status::Ok();
}

Metrics Endpoint::Core::GetMetrics() const {
  Lock lock(mu_);
  Metrics m = counters_;
  m.transfers_active = ops_active_;
  m.leases_active = leases_.active();
  m.leases_completed = leases_.released(ReleaseReason::kCompleted);
  m.leases_cancelled = leases_.released(ReleaseReason::kCancelled);
  m.leases_expired = leases_.released(ReleaseReason::kExpired);
  m.queue_depth_blocks = 0;
  m.peers_connected = 0;
  for (const auto& [id, s] : sessions_) {
    m.queue_depth_blocks += s->data.queued_blocks();
    if (!s->down) ++m.peers_connected;
  }
  const core::Nanos now = core::NowNanos();
  m.send_gbps = send_meter_.BitsPerSecond(now) / 1e9;
  m.receive_gbps = receive_meter_.BitsPerSecond(now) / 1e9;
  return m;
}

}  // namespace smartgen::transfer
