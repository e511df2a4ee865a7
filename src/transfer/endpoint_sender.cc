// The per-peer sender thread: control frames first (ACKs coalesced into one frame), then one
// data frame at a time from the most urgent send job, each through the rate limiter; a
// heartbeat when the link was idle for heartbeat_interval.
#include <algorithm>
#include <chrono>

#include "core/log.h"
#include "transfer/endpoint_core.h"

namespace smartgen::transfer {

void Endpoint::Core::Unpin(std::uint64_t request_id) {
  Lock lock(mu_);
  ApplyReleaseLocked(leases_.Unpin(request_id));
}

Status Endpoint::Core::SendFrame(Session& s, const EncodedHeader& header,
                                 std::span<const ConstBytes> payload, std::size_t bytes,
                                 std::shared_ptr<const void> keepalive, Lock& lock) {
  const core::Nanos wire = kFrameHeaderBytes + bytes;
  const core::Nanos at = s.limiter.Reserve(wire);
  while (!s.down && core::NowNanos() < at) {
    s.send_cv.wait_for(lock, std::chrono::nanoseconds(at - core::NowNanos()));
  }
  if (s.down) return s.down_reason;
  lock.unlock();
  // A peer that stops reading for a heartbeat timeout is as dead as a silent one.
  const Status st = s.connection->Send(header, payload, Deadline::After(config_.heartbeat_timeout),
                                       std::move(keepalive));
  lock.lock();
  if (st.ok()) {
    ++counters_.frames_sent;
    counters_.wire_bytes_sent += wire;
    s.last_send = core::NowNanos();
  }
  return st;
}

void Endpoint::Core::SendChunk(Session& s, const Chunk& chunk, Lock& lock) {
  const BlockRange& range = chunk.range;
  TransferOp* op = nullptr;
  if (!chunk.pull_reply) {
    op = FindOpLocked(chunk.op_id);
    if (op == nullptr || !op->in_progress()) return;  // finished while queued
  }
  auto refuse = [&](const Status& why) {
    if (op != nullptr) {
      FinishOpLocked(*op, TransferState::kFailed, why);
    } else {
      s.data.Remove(chunk.op_id, true);
      FrameHeader h;
      h.type = FrameType::kPullFail;
      h.op_id = chunk.op_id;
      h.aux = static_cast<std::uint32_t>(why.code());
      const std::string_view text = why.message();
      QueueControlLocked(s, MakeFrame(h, std::vector<std::byte>(
                                             reinterpret_cast<const std::byte*>(text.data()),
                                             reinterpret_cast<const std::byte*>(text.data()) +
                                                 text.size())));
    }
  };
  const core::Nanos now = core::NowNanos();
  if (!leases_.Pin(range.request_id, now)) {
    const auto reason = leases_.Released(range.request_id);
    refuse(NotFound("request {} was released ({})", range.request_id,
                    ReleaseReasonName(reason.value_or(ReleaseReason::kExpired))));
    return;
  }

  // Read the blocks without the lock: the source may take its own locks or call us.
  lock.unlock();
  std::vector<ConstBytes> payload;
  payload.reserve(2 * range.n_blocks);
  Status read_status;
  std::int32_t n_read = 0;
  const std::size_t half = config_.handshake.geometry.half_block_bytes();
  for (; n_read < range.n_blocks; ++n_read) {
    ConstBlockView view;
    read_status = source_->Read(range.Key(n_read), &view);
    if (read_status.ok() && (view.k.size() != half || view.v.size() != half)) {
      read_status = Internal("BlockSource returned {}+{} bytes for {}, expected {}+{}",
                             view.k.size(), view.v.size(), ToString(range.Key(n_read)), half,
                             half);
    }
    if (!read_status.ok()) break;
    payload.push_back(view.k);
    payload.push_back(view.v);
  }
  Status send_status;
  BlockRange sent = range;
  sent.n_blocks = n_read;
  if (n_read > 0) {
    FrameHeader h;
    h.type = FrameType::kData;
    h.priority = chunk.priority;
    h.flags = chunk.pull_reply ? kFlagPullReply : kFlagPush;
    h.op_id = chunk.op_id;
    h.set_range(sent);
    h.generation = chunk.generation;
    h.payload_bytes = static_cast<std::uint32_t>(n_read * block_bytes_);
    h.payload_checksum = Checksum(payload);
    const EncodedHeader header = EncodeHeader(h);
    // The read pin lasts until the transport is done with the block memory, which for a
    // pipelining transport is after Send returns: the pin's owner unpins.
    static const char kPin = 0;  // any non-null pointer: only the deleter matters
    auto pin = std::shared_ptr<const void>(
        &kPin, [owner = pin_owner_, rid = range.request_id](const void*) {
          std::lock_guard<std::mutex> guard(owner->mu);
          if (owner->core != nullptr) owner->core->Unpin(rid);
        });
    lock.lock();
    const core::Nanos frame_start = core::NowNanos();
    send_status = SendFrame(s, header, payload, h.payload_bytes, pin, lock);
    // A frame with more data waiting behind it went at the link's pace: measure the link.
    if (send_status.ok() && !s.data.empty()) {
      s.link.AddBacklogged(kFrameHeaderBytes + h.payload_bytes, core::NowNanos() - frame_start);
    }
    lock.unlock();
    pin.reset();  // unpins now unless the transport still holds it (it must run unlocked)
    lock.lock();
  } else {
    lock.lock();
    ApplyReleaseLocked(leases_.Unpin(range.request_id));
  }
  if (!send_status.ok()) {
    MarkDownLocked(s, send_status.WithContext("send"));
    return;
  }
  const core::Nanos after = core::NowNanos();
  if (n_read > 0) {
    PriorityMetrics& pm = counters_.by_priority[static_cast<int>(chunk.priority)];
    pm.bytes_sent += static_cast<std::uint64_t>(n_read) * block_bytes_;
    pm.blocks_sent += n_read;
    send_meter_.Add(static_cast<std::uint64_t>(n_read) * block_bytes_, after);
    leases_.Touch(range.request_id, after);
    op = chunk.pull_reply ? nullptr : FindOpLocked(chunk.op_id);
    if (op != nullptr && op->in_progress()) op->RecordSent(sent, after);
  }
  if (n_read < range.n_blocks) {
    Chunk rest = chunk;
    rest.range.first_block += n_read;
    rest.range.n_blocks -= n_read;
    if (read_status.code() == StatusCode::kUnavailable) {
      // Not computed yet: park the rest until NotifySourceReady() or a short backoff.
      s.data.PutFront(rest, after + config_.source_retry);
    } else {
      op = chunk.pull_reply ? nullptr : FindOpLocked(chunk.op_id);
      if (chunk.pull_reply || (op != nullptr && op->in_progress())) {
        refuse(read_status.WithContext("block source"));
      }
    }
  }
}

void Endpoint::Core::SenderLoop(std::shared_ptr<Session> s) {
  Lock lock(mu_);
  while (!s->down) {
    const core::Nanos now = core::NowNanos();
    if (!s->acks.empty()) {
      FrameHeader h;
      h.type = FrameType::kAck;
      s->control.push_back(MakeFrame(h, EncodeAcks(s->acks)));
      s->acks.clear();
    }
    if (!s->control.empty()) {
      auto frame = std::make_shared<const OwnedFrame>(std::move(s->control.front()));
      s->control.pop_front();
      const EncodedHeader header = EncodeHeader(frame->header);
      const ConstBytes payload(frame->payload);
      const Status st = SendFrame(
          *s, header,
          payload.empty() ? std::span<const ConstBytes>() : std::span<const ConstBytes>(&payload, 1),
          payload.size(), frame, lock);
      if (!st.ok()) {
        MarkDownLocked(*s, st.WithContext("send"));
        break;
      }
      if (frame->header.type == FrameType::kGoodbye) {
        s->goodbye_sent = true;
        ops_cv_.notify_all();
      }
      continue;
    }
    Chunk chunk;
    core::Nanos next_ready = 0;
    if (s->data.Take(now, max_frame_blocks_, &chunk, &next_ready)) {
      SendChunk(*s, chunk, lock);
      continue;
    }
    const core::Nanos heartbeat_at = s->last_send + config_.heartbeat_interval;
    if (now >= heartbeat_at) {
      FrameHeader h;
      h.type = FrameType::kHeartbeat;
      s->control.push_back(MakeFrame(h));
      continue;
    }
    const core::Nanos wake = std::min(next_ready, heartbeat_at);
    s->send_cv.wait_for(lock, std::chrono::nanoseconds(wake - now));
  }
  --s->threads_running;
  housekeeping_cv_.notify_all();
}

}  // namespace smartgen::transfer
