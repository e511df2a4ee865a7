// IdlePrefetch: the memory a thread of a ThreadPool pass reads ahead, into its caches, while it
// has no chunk left to claim and waits for the others to finish theirs.
//
// Decode is a chain of passes that each stream one weight matrix (or a few) once; a pass cannot
// start before the one before it has finished, so the thread that finishes first waits, and the
// memory bus runs at one thread's rate until the last chunk is done. Told what the *next* pass
// will read on each thread (its lane: core::LaneClaims), the waiting thread prefetches the start
// of its own lane instead, and starts the next pass on data already in its L2 / L3
// (docs/RESULTS.md, issue 14: decode steps 2-4 % shorter on the 2-core Zen 5 VM).
//
// A plain value: byte ranges per lane, in the order the lane reads them. Prefetching never
// faults and changes no result, so a plan only has to be right to be useful, not to be safe.
#pragma once

#include <array>
#include <cstddef>

namespace smartgen::core {

struct IdlePrefetch {
  static constexpr int kMaxLanes = 16;
  static constexpr int kMaxRanges = 4;

  struct Range {
    const std::byte* p = nullptr;
    std::size_t bytes = 0;
  };

  // Appends [p, p + bytes) to `lane`'s ranges, merged into the last one when it continues it.
  // Ranges past kMaxRanges (and lanes past kMaxLanes) are dropped.
  void Add(int lane, const void* p, std::size_t bytes) {
    if (lane < 0 || lane >= kMaxLanes || bytes == 0) return;
    const auto* b = static_cast<const std::byte*>(p);
    int& n = n_ranges[lane];
    if (n > 0 && ranges[lane][n - 1].p + ranges[lane][n - 1].bytes == b) {
      ranges[lane][n - 1].bytes += bytes;
    } else if (n < kMaxRanges) {
      ranges[lane][n++] = {b, bytes};
    }
  }

  // Bytes planned for `lane`.
  std::size_t Bytes(int lane) const {
    std::size_t total = 0;
    for (int i = 0; i < n_ranges[lane]; ++i) total += ranges[lane][i].bytes;
    return total;
  }

  std::array<std::array<Range, kMaxRanges>, kMaxLanes> ranges{};
  std::array<int, kMaxLanes> n_ranges{};
};

}  // namespace smartgen::core
