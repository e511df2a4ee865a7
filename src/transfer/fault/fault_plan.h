// What the fault transport injects, and what it counted. Every decision comes from a PRNG
// seeded with `seed` (and the connection's index), so a failing run replays exactly.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "core/clock.h"
#include "transfer/frame.h"

namespace smartgen::transfer {

enum class CorruptTarget : std::uint8_t {
  kPayload = 0,  // a payload byte: the frame's checksum catches it, the blocks are re-sent
  kHeader = 1,   // a header byte: the stream is untrustworthy, the connection is closed
  kAny = 2,
};

struct FaultPlan {
  std::uint64_t seed = 1;

  // Faults apply to frames of these types only (empty: every frame). Frame indices below count
  // only the frames that match.
  std::vector<FrameType> only_types;
  // Matching frames passed through untouched before faults start (e.g. the handshake).
  std::uint64_t skip_frames = 0;

  // Per-frame probabilities, each drawn independently.
  double drop_probability = 0;
  double corrupt_probability = 0;
  double duplicate_probability = 0;
  double reorder_probability = 0;  // the frame is held back and sent after the next one
  double delay_probability = 0;
  core::Nanos delay = 0;         // a delayed frame waits this long (plus up to delay_jitter)
  core::Nanos delay_jitter = 0;
  CorruptTarget corrupt_target = CorruptTarget::kPayload;

  // Exact matching-frame indices (0-based) that get each fault, for targeted tests.
  std::vector<std::uint64_t> drop_frames;
  std::vector<std::uint64_t> corrupt_frames;
  std::vector<std::uint64_t> duplicate_frames;
  std::vector<std::uint64_t> reorder_frames;

  // Cut the connection once this many bytes (all frames) were sent, mid-frame; 0 = never.
  std::uint64_t disconnect_after_bytes = 0;
};

// Counters shared by every connection of one FaultTransport. Thread-safe.
struct FaultStats {
  std::atomic<std::uint64_t> frames{0};    // frames seen (all types)
  std::atomic<std::uint64_t> dropped{0};
  std::atomic<std::uint64_t> corrupted{0};
  std::atomic<std::uint64_t> duplicated{0};
  std::atomic<std::uint64_t> reordered{0};
  std::atomic<std::uint64_t> delayed{0};
  std::atomic<std::uint64_t> disconnects{0};
};

}  // namespace smartgen::transfer
