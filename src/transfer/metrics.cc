#include "transfer/metrics.h"

#include <fmt/format.h>

namespace smartgen::transfer {

std::string Metrics::ToJson() const {
  std::string out = "{\"by_priority\":{";
  for (int p = 0; p < kNumPriorities; ++p) {
    const PriorityMetrics& m = by_priority[p];
    out += fmt::format(
        "{}\"{}\":{{\"bytes_sent\":{},\"blocks_sent\":{},\"bytes_received\":{},"
        "\"blocks_received\":{},\"int8_blocks_sent\":{},\"int8_blocks_received\":{}}}",
        p ? "," : "", PriorityName(static_cast<Priority>(p)), m.bytes_sent, m.blocks_sent,
        m.bytes_received, m.blocks_received, m.int8_blocks_sent, m.int8_blocks_received);
  }
  out += "}";
  auto field = [&](std::string_view name, auto value) {
    out += fmt::format(",\"{}\":{}", name, value);
  };
  field("frames_sent", frames_sent);
  field("frames_received", frames_received);
  field("wire_bytes_sent", wire_bytes_sent);
  field("wire_bytes_received", wire_bytes_received);
  field("retries", retries);
  field("rejected_corrupt", rejected_corrupt);
  field("rejected_stale", rejected_stale);
  field("rejected_other", rejected_other);
  field("duplicates", duplicates);
  field("corrupt_control_frames", corrupt_control_frames);
  field("queue_depth_blocks", queue_depth_blocks);
  field("transfers_active", transfers_active);
  field("transfers_done", transfers_done);
  field("transfers_failed", transfers_failed);
  field("transfers_cancelled", transfers_cancelled);
  field("leases_active", leases_active);
  field("leases_completed", leases_completed);
  field("leases_cancelled", leases_cancelled);
  field("leases_expired", leases_expired);
  field("peers_connected", peers_connected);
  field("peers_lost", peers_lost);
  field("handshakes_refused", handshakes_refused);
  out += fmt::format(",\"send_gbps\":{:.4f},\"receive_gbps\":{:.4f}}}", send_gbps, receive_gbps);
  return out;
}

void RateMeter::AdvanceLocked(core::Nanos now) {
  const core::Nanos slot = now / kSlot;
  if (slot <= current_slot_) return;
  const core::Nanos steps = std::min<core::Nanos>(slot - current_slot_, kSlots);
  for (core::Nanos i = 1; i <= steps; ++i) slots_[(current_slot_ + i) % kSlots] = 0;
  current_slot_ = slot;
}

void RateMeter::Add(std::uint64_t bytes, core::Nanos now) {
  std::lock_guard<std::mutex> lock(mu_);
  AdvanceLocked(now);
  slots_[current_slot_ % kSlots] += bytes;
}

double RateMeter::BitsPerSecond(core::Nanos now) {
  std::lock_guard<std::mutex> lock(mu_);
  AdvanceLocked(now);
  std::uint64_t total = 0;
  for (std::uint64_t b : slots_) total += b;
  // The newest slot is partly filled: average over the covered time.
  const double covered = core::ToSeconds((kSlots - 1) * kSlot + now % kSlot);
  return covered > 0 ? total * 8.0 / covered : 0.0;
}

}  // namespace smartgen::transfer
