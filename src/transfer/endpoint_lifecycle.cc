// Endpoint lifecycle: sessions (one per peer) and their end, the accept loop, the housekeeper
// that enforces deadlines, retransmits and expires leases, and the orderly shutdown.
#include <algorithm>
#include <chrono>

#include "core/log.h"
#include "transfer/endpoint_core.h"

namespace smartgen::transfer {
namespace {

constexpr core::Nanos kHousekeepingTick = core::Millis(10);
constexpr core::Nanos kGoodbyeWait = core::Millis(300);

}  // namespace

Session::Session(PeerId id_in, std::unique_ptr<Connection> connection_in, const LinkConfig& link)
    : id(id_in),
      connection(std::move(connection_in)),
      description(connection->Describe()),
      limiter(link.gbps * 1e9, link.bucket_bytes) {
  if (link.latency > 0) delay_line = std::make_unique<SerialExecutor>();
}

Endpoint::Core::Core(EndpointConfig config, std::shared_ptr<Transport> transport,
                     BlockSource* source, BlockSink* sink, EndpointCallbacks callbacks)
    : config_(std::move(config)),
      transport_(std::move(transport)),
      source_(source),
      sink_(sink),
      callbacks_(std::move(callbacks)),
      block_bytes_(config_.handshake.geometry.block_bytes()),
      leases_(config_.lease_ttl, std::max(config_.retention, 2 * config_.lease_ttl)) {
  // A frame is at most max_frame_bytes, at most a quarter bucket on a shaped link (tokens that
  // pile up while the sender wakes late are then not lost, and an urgent frame waits less),
  // and within the transport's gather limit.
  std::size_t cap = std::max<std::size_t>(config_.max_frame_bytes, block_bytes_);
  if (config_.link.gbps > 0) {
    const RateLimiter probe(config_.link.gbps * 1e9, config_.link.bucket_bytes);
    cap = std::min<std::size_t>(cap, probe.burst_bytes() / 4 - kFrameHeaderBytes);
  }
  cap = std::min<std::size_t>(cap, kMaxFramePayload);
  std::size_t blocks = std::max<std::size_t>(1, cap / block_bytes_);
  blocks = std::min<std::size_t>(blocks, std::max<std::size_t>(1, caps().max_payload_parts / 2));
  max_frame_blocks_ = static_cast<std::uint32_t>(blocks);
}

Endpoint::Core::~Core() { Shutdown(); }

void Endpoint::Core::Start() {
  {
    std::lock_guard<std::mutex> guard(pin_owner_->mu);
    pin_owner_->core = this;
  }
  housekeeping_ = std::thread([this] { HousekeepingLoop(); });
}

void Endpoint::Core::PostCallback(std::function<void()> fn) { callbacks_thread_.Post(std::move(fn)); }

Session* Endpoint::Core::FindSessionLocked(PeerId peer) const {
  auto it = sessions_.find(peer.value);
  return it == sessions_.end() ? nullptr : it->second.get();
}

TransferOp* Endpoint::Core::FindOpLocked(std::uint64_t id) const {
  auto it = ops_.find(id);
  return it == ops_.end() ? nullptr : it->second.get();
}

std::uint32_t Endpoint::Core::GenerationLocked(std::uint64_t request_id) const {
  auto it = generations_.find(request_id);
  return it == generations_.end() ? 0 : it->second.value;
}

void Endpoint::Core::QueueControlLocked(Session& s, OwnedFrame frame) {
  if (s.down) return;
  s.control.push_back(std::move(frame));
  s.send_cv.notify_one();
}

void Endpoint::Core::QueuePullLocked(Session& s, const TransferOp& op,
                                     std::vector<PullEntry> entries, bool replace) {
  FrameHeader h;
  h.type = FrameType::kPull;
  h.priority = op.priority();
  h.op_id = op.id();
  h.flags = (replace ? 0 : kFlagPullAppend) | (op.wire() == WireFormat::kInt8 ? kFlagInt8 : 0);
  QueueControlLocked(s, MakeFrame(h, EncodePulls(entries)));
}

void Endpoint::Core::ApplyReleaseLocked(const std::optional<LeaseRelease>& release) {
  if (!release || source_ == nullptr) return;
  PostCallback([source = source_, r = *release] { source->Release(r.request_id, r.reason); });
}

void Endpoint::Core::FinishOpLocked(TransferOp& op, TransferState state, Status status) {
  if (!op.in_progress()) return;
  op.Finish(state, status, core::NowNanos());
  --ops_active_;
  switch (state) {
    case TransferState::kDone: ++counters_.transfers_done; break;
    case TransferState::kCancelled: ++counters_.transfers_cancelled; break;
    default: ++counters_.transfers_failed; break;
  }
  if (Session* s = FindSessionLocked(op.peer())) {
    if (op.direction() == Direction::kPush) {
      s->data.Remove(op.id(), false);
    } else if (state != TransferState::kDone) {
      FrameHeader h;
      h.type = FrameType::kCancelOp;
      h.op_id = op.id();
      QueueControlLocked(*s, MakeFrame(h));
    }
  }
  ops_cv_.notify_all();
  if (callbacks_.on_transfer_done) {
    PostCallback([cb = callbacks_.on_transfer_done, h = TransferHandle{op.id()}, status] {
      cb(h, status);
    });
  }
}

void Endpoint::Core::SayGoodbyeLocked(Session& s) {
  if (s.down || s.closing) return;
  s.closing = true;
  FrameHeader bye;
  bye.type = FrameType::kGoodbye;
  QueueControlLocked(s, MakeFrame(bye));
}

void Endpoint::Core::MarkDownLocked(Session& s, const Status& why, bool peer_goodbye) {
  if (s.down) return;
  s.down = true;
  s.down_reason = why;
  s.connection->Shutdown();
  s.data.Clear();
  s.control.clear();
  s.acks.clear();
  s.send_cv.notify_all();
  // Closed by us (Disconnect, shutdown): transfers are cancelled. Closed by the peer in order:
  // they fail retryably, quietly. Anything else is a lost peer.
  const bool local = s.closing || why.code() == StatusCode::kCancelled;
  if (local) {
    SG_LOG_DEBUG("transfer", "{}: closed peer {} ({})", config_.name, s.id.value, s.description);
  } else if (peer_goodbye) {
    SG_LOG_INFO("transfer", "{}: peer {} ({}) closed the connection", config_.name, s.id.value,
                s.description);
  } else {
    ++counters_.peers_lost;
    SG_LOG_WARN("transfer", "{}: peer {} ({}) lost: {}", config_.name, s.id.value, s.description,
                why.ToString());
  }
  for (auto& [id, op] : ops_) {
    if (!op->in_progress() || op->peer() != s.id) continue;
    if (local) {
      FinishOpLocked(*op, TransferState::kCancelled,
                     Cancelled("connection to peer {} closed locally", s.id.value));
    } else {
      FinishOpLocked(*op, TransferState::kFailed,
                     Unavailable("peer {} ({}) lost: {}", s.id.value, s.description,
                                 why.ToString()));
    }
  }
  if (callbacks_.on_peer_down) {
    PostCallback([cb = callbacks_.on_peer_down, peer = s.id, why] { cb(peer, why); });
  }
  ops_cv_.notify_all();
  housekeeping_cv_.notify_all();
}

void Endpoint::Core::EndRequestLocked(std::uint64_t request_id, std::uint32_t generation,
                                      ReleaseReason reason, bool tell_peers) {
  const core::Nanos now = core::NowNanos();
  Generation& g = generations_[request_id];
  g.value = generation == 0 ? g.value + 1 : std::max(g.value, generation);
  g.at = now;
  const std::uint32_t current = g.value;
  for (auto& [id, op] : ops_) {
    if (!op->in_progress() || !op->Touches(request_id)) continue;
    FinishOpLocked(*op, TransferState::kCancelled,
                   Cancelled("request {} {}", request_id,
                             reason == ReleaseReason::kCompleted ? "finished" : "cancelled"));
  }
  for (auto& [id, s] : sessions_) {
    s->data.RemoveRequest(request_id);
    if (tell_peers && !s->down) {
      FrameHeader h;
      h.type = FrameType::kCancelRequest;
      h.request_id = request_id;
      h.generation = current;
      QueueControlLocked(*s, MakeFrame(h));
    }
  }
  ApplyReleaseLocked(leases_.Release(request_id, reason, now));
}

Result<PeerId> Endpoint::Core::AddSession(std::unique_ptr<Connection> connection) {
  Lock lock(mu_);
  if (shutting_down_) {
    connection->Shutdown();
    return Cancelled("endpoint is shutting down");
  }
  const PeerId id{next_peer_++};
  auto s = std::make_shared<Session>(id, std::move(connection), config_.link);
  s->last_send = core::NowNanos();
  s->threads_running = 2;
  sessions_[id.value] = s;
  s->sender = std::thread([this, s] { SenderLoop(s); });
  s->receiver = std::thread([this, s] { ReceiverLoop(s); });
  SG_LOG_DEBUG("transfer", "{}: peer {} connected ({})", config_.name, id.value, s->description);
  if (callbacks_.on_peer_connected) {
    PostCallback([cb = callbacks_.on_peer_connected, id] { cb(id); });
  }
  return id;
}

void Endpoint::Core::AcceptLoop() {
  for (;;) {
    {
      Lock lock(mu_);
      if (shutting_down_) return;
    }
    auto connection = listener_->Accept(Deadline::After(core::Millis(200)));
    if (!connection.ok()) {
      const StatusCode code = connection.status().code();
      if (code == StatusCode::kCancelled) return;
      if (code != StatusCode::kDeadlineExceeded) {
        SG_LOG_WARN("transfer", "{}: accept: {}", config_.name, connection.status().ToString());
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      continue;
    }
    {
      Lock lock(mu_);
      if (shutting_down_) return;
      handshaking_ = connection->get();
    }
    const Status st = RunHandshake(**connection, HandshakeRole::kAcceptor, config_.handshake,
                                   config_.token, Deadline::After(config_.handshake_timeout));
    {
      Lock lock(mu_);
      handshaking_ = nullptr;
      if (!st.ok()) {
        ++counters_.handshakes_refused;
        SG_LOG_WARN("transfer", "{}: refused {}: {}", config_.name, (*connection)->Describe(),
                    st.ToString());
        continue;
      }
    }
    auto peer = AddSession(std::move(*connection));
    if (!peer.ok()) continue;
    Lock lock(mu_);
    accepted_.push_back(*peer);
    // Callers that use on_peer_connected never call Accept(): keep the queue bounded.
    if (accepted_.size() > Endpoint::kAcceptBacklog) accepted_.pop_front();
    accept_cv_.notify_all();
  }
}

void Endpoint::Core::CheckTransfersLocked(core::Nanos now) {
  const core::Nanos rto = config_.retransmit_timeout;
  for (auto& [id, op_ptr] : ops_) {
    TransferOp& op = *op_ptr;
    if (!op.in_progress()) continue;
    if (op.deadline().Expired()) {
      const TransferProgress p = op.Snapshot(block_bytes_);
      FinishOpLocked(op, TransferState::kFailed,
                     DeadlineExceeded("transfer {} passed its deadline with {} of {} blocks",
                                      op.id(), p.blocks_done, p.blocks_total));
      continue;
    }
    Session* s = FindSessionLocked(op.peer());
    if (s == nullptr || s->down) continue;
    if (op.direction() == Direction::kPull) {
      // No block for a retransmit timeout: ask again for everything still missing.
      if (now - std::max(op.last_progress, op.last_request) < rto) continue;
      ++op.retries;
      ++counters_.retries;
      op.last_request = now;
      QueuePullLocked(*s, op, op.Missing(), /*replace=*/true);
      continue;
    }
    // While acks keep coming the link is draining what was queued ahead of a range (a slow
    // shaped link can hold seconds of frames): a range is taken for lost when the session has
    // been silent for a timeout, or when it alone has waited kLostAfterTimeouts of them.
    const core::Nanos cutoff = now - s->last_ack >= rto ? now - rto : now - kLostAfterTimeouts * rto;
    for (const auto& [range, attempts] : op.TimedOut(cutoff, now)) {
      if (attempts >= config_.max_attempts) {
        FinishOpLocked(op, TransferState::kFailed,
                       Unavailable("no acknowledgement for {} after {} attempts",
                                   ToString(range), attempts));
        break;
      }
      ++op.retries;
      ++counters_.retries;
      s->data.PutFront(
          {op.id(), false, op.priority(), range, GenerationLocked(range.request_id), op.wire()});
      s->send_cv.notify_one();
    }
  }
}

void Endpoint::Core::ExpireLeasesLocked(core::Nanos now) {
  std::vector<std::uint64_t> expired;
  const std::vector<LeaseRelease> due = leases_.Expire(now, &expired);
  for (const std::uint64_t rid : expired) {
    SG_LOG_DEBUG("transfer", "{}: lease on request {} expired", config_.name, rid);
    for (auto& [id, s] : sessions_) s->data.RemoveRequest(rid);
    for (auto& [id, op] : ops_) {
      if (op->in_progress() && op->direction() == Direction::kPush && op->Touches(rid)) {
        FinishOpLocked(*op, TransferState::kFailed,
                       DeadlineExceeded("lease on request {} expired", rid));
      }
    }
  }
  for (const LeaseRelease& r : due) ApplyReleaseLocked(r);
  const core::Nanos keep = std::max(config_.retention, 2 * config_.lease_ttl);
  for (auto it = generations_.begin(); it != generations_.end();) {
    it = now - it->second.at > keep ? generations_.erase(it) : std::next(it);
  }
  for (auto it = ops_.begin(); it != ops_.end();) {
    const TransferOp& op = *it->second;
    it = !op.in_progress() && now - op.finished_at() > config_.retention ? ops_.erase(it)
                                                                         : std::next(it);
  }
}

void Endpoint::Core::HousekeepingLoop() {
  Lock lock(mu_);
  while (!shutting_down_) {
    housekeeping_cv_.wait_for(lock, std::chrono::nanoseconds(kHousekeepingTick));
    if (shutting_down_) break;
    const core::Nanos now = core::NowNanos();
    CheckTransfersLocked(now);
    ExpireLeasesLocked(now);
    std::vector<std::shared_ptr<Session>> finished;
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (it->second->down && it->second->threads_running == 0) {
        finished.push_back(std::move(it->second));
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
    if (finished.empty()) continue;
    lock.unlock();
    for (auto& s : finished) {
      if (s->sender.joinable()) s->sender.join();
      if (s->receiver.joinable()) s->receiver.join();
      if (s->delay_line) s->delay_line->Stop(/*drain=*/false);
    }
    finished.clear();
    lock.lock();
  }
}

void Endpoint::Core::Shutdown() {
  Lock lock(mu_);
  if (shutting_down_) return;
  shutting_down_ = true;
  if (handshaking_ != nullptr) handshaking_->Shutdown();
  accept_cv_.notify_all();
  housekeeping_cv_.notify_all();
  lock.unlock();
  if (listener_) listener_->Shutdown();
  if (accept_thread_.joinable()) accept_thread_.join();
  if (housekeeping_.joinable()) housekeeping_.join();
  lock.lock();

  // Say goodbye where the link still works, briefly, then close everything.
  for (auto& [id, s] : sessions_) SayGoodbyeLocked(*s);
  const Deadline limit = Deadline::After(kGoodbyeWait);
  auto all_said = [&] {
    return std::all_of(sessions_.begin(), sessions_.end(),
                       [](const auto& kv) { return kv.second->down || kv.second->goodbye_sent; });
  };
  while (!all_said() && !limit.Expired()) ops_cv_.wait_for(lock, std::chrono::milliseconds(5));
  for (auto& [id, s] : sessions_) MarkDownLocked(*s, Cancelled("endpoint closed"));
  auto sessions = std::move(sessions_);
  sessions_.clear();
  lock.unlock();
  for (auto& [id, s] : sessions) {
    if (s->sender.joinable()) s->sender.join();
    if (s->receiver.joinable()) s->receiver.join();
    if (s->delay_line) s->delay_line->Stop(/*drain=*/false);
  }
  sessions.clear();
  lock.lock();
  for (auto& [id, op] : ops_) {
    FinishOpLocked(*op, TransferState::kCancelled, Cancelled("endpoint closed"));
  }
  for (const LeaseRelease& r : leases_.ReleaseAll(ReleaseReason::kCancelled)) {
    ApplyReleaseLocked(r);
  }
  lock.unlock();
  {
    // From here a pin the transport still holds unpins nothing: every lease is released.
    std::lock_guard<std::mutex> guard(pin_owner_->mu);
    pin_owner_->core = nullptr;
  }
  callbacks_thread_.Stop(/*drain=*/true);
  listener_.reset();
}

}  // namespace smartgen::transfer
