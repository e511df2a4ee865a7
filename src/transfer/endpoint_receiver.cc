// The per-peer receiver thread: reads frames, scatters data frames into the BlockSink (or into
// scratch for blocks that must not be written), verifies checksums, and handles control frames.
#include <algorithm>

#include "core/log.h"
#include "transfer/endpoint_core.h"
#include "transfer/frame_io.h"

namespace smartgen::transfer {
namespace {

// What happens to one block of an arriving data frame.
enum class Fate : std::uint8_t {
  kWrite,      // into the sink's destination
  kPresent,    // the sink already has it: read into scratch, count as delivered
  kDuplicate,  // this transfer already has it
  kStale,      // older generation, or its transfer is over / unknown
  kRejected,   // the sink refused it (or there is no sink)
};

struct BlockPlan {
  Fate fate = Fate::kWrite;
  BlockDestination destination;
};

std::vector<std::byte> TextBytes(std::string_view text) {
  return {reinterpret_cast<const std::byte*>(text.data()),
          reinterpret_cast<const std::byte*>(text.data()) + text.size()};
}

}  // namespace

void Endpoint::Core::Deliver(Session& s, std::function<void()> task) {
  if (s.delay_line) {
    s.delay_line->Post(std::move(task), core::NowNanos() + config_.link.latency);
  } else {
    task();
  }
}

void Endpoint::Core::ReceiverLoop(std::shared_ptr<Session> s) {
  EncodedHeader bytes;
  Status st;
  for (;;) {
    st = s->connection->ReceiveHeader(bytes, Deadline::After(config_.heartbeat_timeout));
    if (!st.ok()) {
      if (st.code() == StatusCode::kDeadlineExceeded) {
        st = Unavailable("peer silent for {:.1f} s (heartbeat timeout)",
                         core::ToSeconds(config_.heartbeat_timeout));
      }
      break;
    }
    Result<FrameHeader> header = DecodeHeader(bytes);
    if (!header.ok()) {
      st = header.status();  // the stream cannot be trusted past a bad header
      break;
    }
    st = header->type == FrameType::kData ? ReceiveData(s, *header) : ReceiveControl(s, *header);
    if (!st.ok()) break;
  }
  Lock lock(mu_);
  MarkDownLocked(*s, st.WithContext("receive"));
  --s->threads_running;
  housekeeping_cv_.notify_all();
}

Status Endpoint::Core::ReceiveData(const std::shared_ptr<Session>& s, const FrameHeader& h) {
  const BlockRange range = h.range();
  const bool pull_reply = (h.flags & kFlagPullReply) != 0;
  if (pull_reply == ((h.flags & kFlagPush) != 0) || !ValidateRange(range).ok() ||
      std::uint64_t{h.payload_bytes} != static_cast<std::uint64_t>(range.n_blocks) * block_bytes_) {
    return DataLoss("malformed DATA frame ({}, {} payload bytes, flags {:#x})", ToString(range),
                    h.payload_bytes, h.flags);
  }
  // 1. Decide each block's fate from the transfer state, then ask the sink (without the lock).
  std::vector<BlockPlan> plan(range.n_blocks);
  {
    Lock lock(mu_);
    const bool stale = h.generation < GenerationLocked(range.request_id);
    const TransferOp* op = pull_reply ? FindOpLocked(h.op_id) : nullptr;
    const bool late = pull_reply && (op == nullptr || !op->in_progress() || op->peer() != s->id ||
                                     op->direction() != Direction::kPull);
    for (std::int32_t i = 0; i < range.n_blocks; ++i) {
      if (stale || late) {
        plan[i].fate = Fate::kStale;
      } else if (pull_reply && (!op->Covers(range.Key(i)) || op->IsDone(range.Key(i)))) {
        plan[i].fate = op->Covers(range.Key(i)) ? Fate::kDuplicate : Fate::kStale;
      }
    }
  }
  Status sink_error;
  for (std::int32_t i = 0; i < range.n_blocks; ++i) {
    if (plan[i].fate != Fate::kWrite) continue;
    if (sink_ == nullptr) {
      plan[i].fate = Fate::kRejected;
      sink_error = FailedPrecondition("the receiving endpoint has no BlockSink");
      continue;
    }
    SinkAction action = SinkAction::kWrite;
    Status st = sink_->Prepare(range.Key(i), &plan[i].destination, &action);
    const std::size_t half = config_.handshake.geometry.half_block_bytes();
    if (st.ok() && action == SinkAction::kWrite &&
        (plan[i].destination.k.size() != half || plan[i].destination.v.size() != half)) {
      st = Internal("BlockSink gave a destination of the wrong size for {}", ToString(range.Key(i)));
    }
    if (!st.ok()) {
      plan[i].fate = Fate::kRejected;
      sink_error = st;
    } else if (action == SinkAction::kDiscard) {
      plan[i].fate = Fate::kPresent;
    }
  }

  // 2. Read the payload straight into place; blocks not written go to scratch.
  std::uint32_t n_scratch = 0;
  for (const BlockPlan& p : plan) n_scratch += p.fate != Fate::kWrite;
  if (s->scratch.size() < std::size_t{n_scratch} * block_bytes_) {
    s->scratch.resize(std::size_t{n_scratch} * block_bytes_);
  }
  std::vector<MutableBytes> parts;
  parts.reserve(2 * range.n_blocks);
  const std::size_t half = block_bytes_ / 2;
  std::size_t scratch_at = 0;
  for (const BlockPlan& p : plan) {
    if (p.fate == Fate::kWrite) {
      parts.push_back(p.destination.k);
      parts.push_back(p.destination.v);
    } else {
      parts.push_back(MutableBytes(s->scratch).subspan(scratch_at, half));
      parts.push_back(MutableBytes(s->scratch).subspan(scratch_at + half, half));
      scratch_at += block_bytes_;
    }
  }
  SG_RETURN_IF_ERROR(s->connection->ReceivePayload(parts, Deadline::After(config_.heartbeat_timeout)));
  std::vector<ConstBytes> view(parts.begin(), parts.end());
  const bool intact = Checksum(view) == h.payload_checksum;

  // 3. Tell the sink, then account (after the link latency, when one is emulated).
  Deliver(*s, [this, s, h, range, pull_reply, intact, plan = std::move(plan),
               sink_error = std::move(sink_error)] {
    for (std::int32_t i = 0; i < range.n_blocks; ++i) {
      if (plan[i].fate != Fate::kWrite) continue;
      if (intact) {
        sink_->OnBlockReady(range.Key(i));
      } else {
        sink_->OnBlockRejected(range.Key(i), DataLoss("frame checksum mismatch"));
      }
    }
    const core::Nanos now = core::NowNanos();
    Lock lock(mu_);
    ++counters_.frames_received;
    counters_.wire_bytes_received += kFrameHeaderBytes + h.payload_bytes;
    std::uint32_t written = 0, present = 0, duplicates = 0, stale = 0, rejected = 0;
    for (const BlockPlan& p : plan) {
      written += p.fate == Fate::kWrite;
      present += p.fate == Fate::kPresent;
      duplicates += p.fate == Fate::kDuplicate;
      stale += p.fate == Fate::kStale;
      rejected += p.fate == Fate::kRejected;
    }
    if (!intact) {
      counters_.rejected_corrupt += range.n_blocks;
    } else {
      PriorityMetrics& pm = counters_.by_priority[static_cast<int>(h.priority)];
      pm.bytes_received += std::uint64_t{written} * block_bytes_;
      pm.blocks_received += written;
      receive_meter_.Add(std::uint64_t{written} * block_bytes_, now);
      counters_.duplicates += duplicates + present;
      counters_.rejected_stale += stale;
      counters_.rejected_other += rejected;
    }
    if (!pull_reply) {
      StatusCode code = StatusCode::kOk;
      if (!intact) {
        code = StatusCode::kDataLoss;
      } else if (stale == static_cast<std::uint32_t>(range.n_blocks)) {
        code = StatusCode::kCancelled;
      } else if (rejected > 0) {
        code = sink_error.code();
      }
      s->acks.push_back({h.op_id, range, code});
      s->send_cv.notify_one();
      return;
    }
    TransferOp* op = FindOpLocked(h.op_id);
    if (op == nullptr || !op->in_progress() || op->peer() != s->id) return;
    if (!intact) {
      // Ask again for exactly this run; give up after max_attempts corrupt copies.
      ++op->retries;
      ++counters_.retries;
      if (op->CountCorrupt(range) >= config_.max_attempts) {
        FinishOpLocked(*op, TransferState::kFailed,
                       DataLoss("{} arrived corrupt {} times", ToString(range),
                                config_.max_attempts));
        return;
      }
      QueuePullLocked(*s, *op, {PullEntry{range, h.generation}}, /*replace=*/false);
      return;
    }
    if (rejected > 0) {
      FinishOpLocked(*op, TransferState::kFailed, sink_error.WithContext("block sink"));
      return;
    }
    BlockRange delivered = range;
    for (std::int32_t i = 0; i < range.n_blocks; ++i) {
      if (plan[i].fate == Fate::kWrite || plan[i].fate == Fate::kPresent) {
        delivered.first_block = range.first_block + i;
        delivered.n_blocks = 1;
        op->MarkDone(delivered);
      }
    }
    if (written + present > 0) op->last_progress = now;
    if (op->complete()) FinishOpLocked(*op, TransferState::kDone, Status::Ok());
  });
  return Status::Ok();
}

Status Endpoint::Core::ReceiveControl(const std::shared_ptr<Session>& s, const FrameHeader& h) {
  Result<std::vector<std::byte>> payload = ReceiveOwnedPayload(*s->connection, h,
                                                               Deadline::After(config_.heartbeat_timeout));
  if (!payload.ok()) {
    if (payload.status().code() != StatusCode::kDataLoss) return payload.status();
    // The stream is still in step (the header was good): drop the frame. Whatever it asked
    // for is asked again by the peer's retransmission timers.
    Lock lock(mu_);
    ++counters_.corrupt_control_frames;
    return Status::Ok();
  }
  auto frame = std::make_shared<OwnedFrame>(OwnedFrame{h, std::move(*payload)});
  Deliver(*s, [this, s, frame] { HandleControl(s, *frame); });
  return Status::Ok();
}

void Endpoint::Core::HandleControl(const std::shared_ptr<Session>& s, const OwnedFrame& frame) {
  const FrameHeader& h = frame.header;
  const core::Nanos now = core::NowNanos();
  Lock lock(mu_);
  ++counters_.frames_received;
  counters_.wire_bytes_received += kFrameHeaderBytes + h.payload_bytes;
  if (s->down) return;
  switch (h.type) {
    case FrameType::kHeartbeat:
      return;
    case FrameType::kAck: {
      auto acks = DecodeAcks(frame.payload);
      if (!acks.ok()) {
        MarkDownLocked(*s, acks.status());
        return;
      }
      for (const AckEntry& a : *acks) HandleAckLocked(*s, a, now);
      return;
    }
    case FrameType::kPull: {
      auto entries = DecodePulls(frame.payload);
      if (!entries.ok()) {
        MarkDownLocked(*s, entries.status());
        return;
      }
      HandlePullLocked(*s, h, std::move(*entries), now);
      return;
    }
    case FrameType::kPullFail: {
      TransferOp* op = FindOpLocked(h.op_id);
      if (op == nullptr || !op->in_progress() || op->peer() != s->id) return;
      StatusCode code = StatusCode::kUnavailable;
      if (h.aux > 0 && h.aux <= static_cast<std::uint32_t>(StatusCode::kInternal)) {
        code = static_cast<StatusCode>(h.aux);
      }
      const std::string text(reinterpret_cast<const char*>(frame.payload.data()),
                             frame.payload.size());
      FinishOpLocked(*op, code == StatusCode::kCancelled ? TransferState::kCancelled
                                                         : TransferState::kFailed,
                     Status(code, "peer cannot serve the pull: " + text));
      return;
    }
    case FrameType::kCancelOp:
      s->data.Remove(h.op_id, true);
      return;
    case FrameType::kCancelRequest:
      EndRequestLocked(h.request_id, h.generation, ReleaseReason::kCancelled, false);
      return;
    case FrameType::kFinishRequest:
      EndRequestLocked(h.request_id, h.generation, ReleaseReason::kCompleted, false);
      return;
    case FrameType::kControl:
      if (callbacks_.on_control) {
        auto payload = std::make_shared<std::vector<std::byte>>(frame.payload);
        PostCallback([cb = callbacks_.on_control, peer = s->id, type = h.aux, payload] {
          cb(peer, type, ConstBytes(*payload));
        });
      }
      return;
    case FrameType::kGoodbye:
      MarkDownLocked(*s, Unavailable("peer closed the connection"), /*peer_goodbye=*/true);
      return;
    default:
      MarkDownLocked(*s, DataLoss("unexpected {} frame after the handshake", FrameTypeName(h.type)));
      return;
  }
}

void Endpoint::Core::HandleAckLocked(Session& s, const AckEntry& a, core::Nanos now) {
  TransferOp* op = FindOpLocked(a.op_id);
  if (op == nullptr || !op->in_progress() || op->peer() != s.id ||
      op->direction() != Direction::kPush) {
    return;  // late answer for a finished transfer
  }
  s.last_ack = now;
  const int attempts = op->TakeInFlight(a.range);
  switch (a.code) {
    case StatusCode::kOk:
      op->MarkDone(a.range);
      op->last_progress = now;
      leases_.Touch(a.range.request_id, now);
      if (op->complete()) FinishOpLocked(*op, TransferState::kDone, Status::Ok());
      return;
    case StatusCode::kDataLoss:
      ++op->retries;
      ++counters_.retries;
      if (attempts >= config_.max_attempts) {
        FinishOpLocked(*op, TransferState::kFailed,
                       DataLoss("{} arrived corrupt {} times", ToString(a.range), attempts));
        return;
      }
      s.data.PutFront({op->id(), false, op->priority(), a.range, GenerationLocked(a.range.request_id)});
      op->RecordSent(a.range, now);  // keep the attempt count; the resend refreshes the timer
      s.send_cv.notify_one();
      return;
    case StatusCode::kCancelled:
      FinishOpLocked(*op, TransferState::kCancelled,
                     Cancelled("peer dropped {} as stale: the request was cancelled",
                               ToString(a.range)));
      return;
    default:
      FinishOpLocked(*op, TransferState::kFailed,
                     Status(a.code, fmt::format("peer refused {}", ToString(a.range))));
      return;
  }
}

void Endpoint::Core::HandlePullLocked(Session& s, const FrameHeader& h,
                                      std::vector<PullEntry> entries, core::Nanos now) {
  auto fail = [&](const Status& why) {
    s.data.Remove(h.op_id, true);
    FrameHeader f;
    f.type = FrameType::kPullFail;
    f.op_id = h.op_id;
    f.aux = static_cast<std::uint32_t>(why.code());
    QueueControlLocked(s, MakeFrame(f, TextBytes(why.message())));
  };
  if (source_ == nullptr) return fail(FailedPrecondition("the serving endpoint has no BlockSource"));
  for (const PullEntry& e : entries) {
    if (Status st = ValidateRange(e.range); !st.ok()) return fail(st);
    const std::uint64_t rid = e.range.request_id;
    if (auto reason = leases_.Released(rid)) {
      return fail(NotFound("request {} was released ({})", rid, ReleaseReasonName(*reason)));
    }
    const std::uint32_t generation = GenerationLocked(rid);
    if (e.generation < generation) {
      return fail(Cancelled("request {} was cancelled (generation {} < {})", rid, e.generation,
                            generation));
    }
    if (e.generation > generation) generations_[rid] = {e.generation, now};
  }
  for (const PullEntry& e : entries) {
    [[maybe_unused]] const bool held = leases_.Hold(e.range.request_id, 0, now);
  }
  if (h.flags & kFlagPullAppend) {
    // A repair (a corrupt run asked again): ahead of what is still queued for the op.
    for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
      s.data.PutFront({h.op_id, true, h.priority, it->range, it->generation});
    }
  } else {
    s.data.Put(h.op_id, true, h.priority, std::move(entries));
  }
  s.send_cv.notify_one();
}

}  // namespace smartgen::transfer
