// The transfer engine's counters, as a plain snapshot struct (Endpoint::GetMetrics()). The
// node layer exports them on /metrics; `smartgen bench transfer` prints some of them.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>

#include "core/clock.h"
#include "transfer/types.h"

namespace smartgen::transfer {

struct PriorityMetrics {
  std::uint64_t bytes_sent = 0;      // block payload bytes put on the link
  std::uint64_t blocks_sent = 0;
  std::uint64_t bytes_received = 0;  // verified block payload bytes taken off the link
  std::uint64_t blocks_received = 0;
  std::uint64_t int8_blocks_sent = 0;      // of blocks_sent: approximate int8 copies
  std::uint64_t int8_blocks_received = 0;  // of blocks_received
};

struct Metrics {
  std::array<PriorityMetrics, kNumPriorities> by_priority;  // indexed by Priority

  std::uint64_t frames_sent = 0;
  std::uint64_t frames_received = 0;
  std::uint64_t wire_bytes_sent = 0;  // every byte, headers and control frames included
  std::uint64_t wire_bytes_received = 0;

  std::uint64_t retries = 0;           // ranges sent or requested again
  std::uint64_t rejected_corrupt = 0;  // blocks whose frame failed its checksum
  std::uint64_t rejected_stale = 0;    // blocks of an old generation or of a finished transfer
  std::uint64_t rejected_other = 0;    // blocks the sink refused or that named no known block
  std::uint64_t duplicates = 0;        // blocks that arrived again and were dropped
  std::uint64_t corrupt_control_frames = 0;

  std::uint64_t queue_depth_blocks = 0;  // blocks waiting to be sent, all peers (now)
  std::uint64_t transfers_active = 0;    // posted transfers still in progress (now)
  std::uint64_t transfers_done = 0;
  std::uint64_t transfers_failed = 0;
  std::uint64_t transfers_cancelled = 0;

  std::uint64_t leases_active = 0;  // now
  std::uint64_t leases_completed = 0;
  std::uint64_t leases_cancelled = 0;
  std::uint64_t leases_expired = 0;

  std::uint64_t peers_connected = 0;  // now
  std::uint64_t peers_lost = 0;       // connections that ended in an error
  std::uint64_t handshakes_refused = 0;

  double send_gbps = 0;     // achieved block payload rate over the last second
  double receive_gbps = 0;

  // One JSON object, field names as above.
  std::string ToJson() const;
};

// Bytes per second over a sliding window of ten 100 ms slots. Thread-safe.
class RateMeter {
 public:
  void Add(std::uint64_t bytes, core::Nanos now);
  double BitsPerSecond(core::Nanos now);

 private:
  static constexpr int kSlots = 10;
  static constexpr core::Nanos kSlot = core::Millis(100);
  void AdvanceLocked(core::Nanos now);
  std::mutex mu_;
  std::array<std::uint64_t, kSlots> slots_{};
  core::Nanos current_slot_ = 0;  // index of the newest slot's start (now / kSlot)
};

}  // namespace smartgen::transfer
