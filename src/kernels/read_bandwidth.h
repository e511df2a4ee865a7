// The machine's memory read bandwidth, the floor under decode: a decode step reads every
// weight byte once, so weight bytes per token / this rate is the fastest a token can be.
//
// MeasureReadBandwidth streams a buffer of `bytes` (make it several times the last-level
// cache) with the widest loads the CPU has, split across `pool` in 1 MiB chunks claimed like
// the GEMV's, `passes` times after one untimed pass that faults the pages in, and returns the
// median pass in GB/s (1e9 bytes per second). Allocates and frees the buffer.
// ReadBandwidthProbe keeps the buffer, so a benchmark can sample the rate between its
// repetitions: on a shared VM the bandwidth a process gets moves by tens of percent within
// seconds (docs/RESULTS.md, issue 14 on Zen 5), and a share of the floor means something only
// against a sample taken next to the run it divides. Thread-safety: as the pool's (one caller at
// a time).
#pragma once

#include <cstddef>
#include <memory>

#include "core/thread_pool.h"

namespace smartgen::kernels {

// Sums n floats (n % 64 == 0, p 64-byte aligned) with the widest loads the CPU has and four
// independent accumulators, so the loads bound it; the result only keeps them from being
// optimised away. The inner loop of MeasureReadBandwidth (and of bench_kernels'
// BM_ReadBandwidth).
float StreamSum(const float* p, std::size_t n);

class ReadBandwidthProbe {
 public:
  // Allocates `bytes` (rounded down to 1 MiB chunks, at least one) and faults them in.
  explicit ReadBandwidthProbe(core::ThreadPool* pool, std::size_t bytes = std::size_t{1} << 30);
  ~ReadBandwidthProbe();
  ReadBandwidthProbe(const ReadBandwidthProbe&) = delete;
  ReadBandwidthProbe& operator=(const ReadBandwidthProbe&) = delete;

  // The median of `passes` timed passes over the buffer, GB/s.
  double Sample(int passes = 3);

 private:
  struct State;
  core::ThreadPool* pool_;
  std::unique_ptr<State> state_;
};

double MeasureReadBandwidth(core::ThreadPool* pool, std::size_t bytes = std::size_t{1} << 30,
                            int passes = 5);

}  // namespace smartgen::kernels
