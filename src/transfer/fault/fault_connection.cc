#include "transfer/fault/fault_connection.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "core/log.h"

namespace smartgen::transfer {

FaultConnection::FaultConnection(std::unique_ptr<Connection> inner, const FaultPlan& plan,
                                 std::uint64_t connection_index, std::shared_ptr<FaultStats> stats)
    : inner_(std::move(inner)),
      plan_(plan),
      stats_(std::move(stats)),
      rng_(plan.seed * 0x9E3779B97F4A7C15ull + connection_index) {}

FaultConnection::~FaultConnection() = default;

bool FaultConnection::Chance(double p) {
  if (p <= 0) return false;
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  return u < p;
}

bool FaultConnection::Listed(const std::vector<std::uint64_t>& list, std::uint64_t index) const {
  return std::find(list.begin(), list.end(), index) != list.end();
}

FaultConnection::Copy FaultConnection::MakeCopy(std::span<const std::byte, kFrameHeaderBytes> header,
                                                std::span<const ConstBytes> payload) const {
  Copy copy;
  std::memcpy(copy.header.data(), header.data(), kFrameHeaderBytes);
  for (ConstBytes part : payload) copy.payload.insert(copy.payload.end(), part.begin(), part.end());
  return copy;
}

void FaultConnection::CorruptCopy(Copy& copy) {
  CorruptTarget target = plan_.corrupt_target;
  if (target == CorruptTarget::kAny) {
    target = rng_() % (kFrameHeaderBytes + copy.payload.size()) < kFrameHeaderBytes
                 ? CorruptTarget::kHeader
                 : CorruptTarget::kPayload;
  }
  if (target == CorruptTarget::kPayload && !copy.payload.empty()) {
    copy.payload[rng_() % copy.payload.size()] ^= std::byte{0x5A};
  } else {
    copy.header[rng_() % kFrameHeaderBytes] ^= std::byte{0x5A};
  }
}

Status FaultConnection::Forward(std::span<const std::byte, kFrameHeaderBytes> header,
                                std::span<const ConstBytes> payload, Deadline deadline) {
  if (cut_) return Unavailable("fault: connection cut");
  const std::uint64_t size = kFrameHeaderBytes + TotalBytes(payload);
  const std::uint64_t limit = plan_.disconnect_after_bytes;
  if (limit == 0 || bytes_sent_ + size <= limit) {
    bytes_sent_ += size;
    return inner_->Send(header, payload, deadline);
  }
  // Send what fits, mid-frame, then cut the link: the peer sees a truncated frame.
  cut_ = true;
  stats_->disconnects.fetch_add(1);
  std::uint64_t room = limit - bytes_sent_;
  if (room >= kFrameHeaderBytes) {
    room -= kFrameHeaderBytes;
    std::vector<ConstBytes> prefix;
    for (ConstBytes part : payload) {
      if (room == 0) break;
      const std::size_t n = std::min<std::uint64_t>(room, part.size());
      prefix.push_back(part.first(n));
      room -= n;
    }
    inner_->Send(header, prefix, deadline).IgnoreError();
  }
  SG_LOG_DEBUG("fault", "cutting {} after {} bytes", inner_->Describe(), limit);
  inner_->Shutdown();
  return Unavailable("fault: connection cut after {} bytes", limit);
}

Status FaultConnection::Send(std::span<const std::byte, kFrameHeaderBytes> header,
                             std::span<const ConstBytes> payload, Deadline deadline,
                             std::shared_ptr<const void> keepalive) {
  stats_->frames.fetch_add(1);
  const auto type = static_cast<FrameType>(static_cast<std::uint8_t>(header[4]));
  const bool matches = plan_.only_types.empty() ||
                       std::find(plan_.only_types.begin(), plan_.only_types.end(), type) !=
                           plan_.only_types.end();
  if (!matches) return Forward(header, payload, deadline);
  const std::uint64_t index = matching_frames_++;
  if (index < plan_.skip_frames) return Forward(header, payload, deadline);

  // Draw every decision, in a fixed order, so a seed replays exactly.
  const bool drop = Chance(plan_.drop_probability) || Listed(plan_.drop_frames, index);
  const bool corrupt = Chance(plan_.corrupt_probability) || Listed(plan_.corrupt_frames, index);
  const bool duplicate =
      Chance(plan_.duplicate_probability) || Listed(plan_.duplicate_frames, index);
  const bool reorder = Chance(plan_.reorder_probability) || Listed(plan_.reorder_frames, index);
  const bool delay = Chance(plan_.delay_probability);
  const core::Nanos jitter =
      plan_.delay_jitter > 0 ? static_cast<core::Nanos>(rng_() % plan_.delay_jitter) : 0;

  if (drop) {
    stats_->dropped.fetch_add(1);
    return Status::Ok();
  }
  if (delay && plan_.delay + jitter > 0) {
    stats_->delayed.fetch_add(1);
    const core::Nanos wait = std::min(plan_.delay + jitter, deadline.Remaining());
    std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
  }

  std::unique_ptr<Copy> copy;
  if (corrupt || (reorder && !held_)) {
    copy = std::make_unique<Copy>(MakeCopy(header, payload));
    if (corrupt) {
      CorruptCopy(*copy);
      stats_->corrupted.fetch_add(1);
    }
  }
  if (reorder && !held_) {
    stats_->reordered.fetch_add(1);
    held_ = std::move(copy);
    return Status::Ok();
  }

  const ConstBytes copy_payload = copy ? ConstBytes(copy->payload) : ConstBytes();
  const auto send_once = [&]() -> Status {
    if (copy) {
      return Forward(copy->header,
                     copy_payload.empty() ? std::span<const ConstBytes>()
                                          : std::span<const ConstBytes>(&copy_payload, 1),
                     deadline);
    }
    return Forward(header, payload, deadline);
  };
  SG_RETURN_IF_ERROR(send_once());
  if (duplicate) {
    stats_->duplicated.fetch_add(1);
    SG_RETURN_IF_ERROR(send_once());
  }
  if (held_) {
    std::unique_ptr<Copy> held = std::move(held_);
    const ConstBytes held_payload(held->payload);
    SG_RETURN_IF_ERROR(Forward(held->header,
                               held_payload.empty()
                                   ? std::span<const ConstBytes>()
                                   : std::span<const ConstBytes>(&held_payload, 1),
                               deadline));
  }
  return Status::Ok();
}

Status FaultConnection::ReceiveHeader(std::span<std::byte, kFrameHeaderBytes> header,
                                      Deadline deadline) {
  return inner_->ReceiveHeader(header, deadline);
}

Status FaultConnection::ReceivePayload(std::span<const MutableBytes> parts, Deadline deadline) {
  return inner_->ReceivePayload(parts, deadline);
}

void FaultConnection::Shutdown() { inner_->Shutdown(); }

}  // namespace smartgen::transfer
