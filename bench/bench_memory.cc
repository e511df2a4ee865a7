// Memory read bandwidth: the floor under decode (every weight byte is read once per token).
// Streams a buffer far larger than the last-level cache with wide loads, split across a
// core::ThreadPool in 1 MiB chunks like the GEMV, and reports GB/s. Run e.g.
//   build/bench/bench_kernels --benchmark_filter=BM_ReadBandwidth --benchmark_repetitions=5
// BM_ReadAfterIdle: the first read of a resident buffer after the process slept, on 4 KiB pages
// and on huge pages (core::PageBuffer), against the same buffer read just before: what a node's
// first decode step pays for its weights after waiting for KV (docs/RESULTS.md, "First touch").
//   build/bench/bench_kernels --benchmark_filter=BM_ReadAfterIdle
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "core/clock.h"
#include "core/page_buffer.h"
#include "core/thread_pool.h"
#include "kernels/read_bandwidth.h"

namespace smartgen::bench {
namespace {

constexpr std::size_t kBufferBytes = std::size_t{1} << 30;  // 1 GiB: ~30x a Zen/Xeon L3
constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

void BM_ReadBandwidth(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> buf(static_cast<float*>(std::aligned_alloc(64, kBufferBytes)));
  std::memset(buf.get(), 1, kBufferBytes);  // fault every page in before timing
  core::ThreadPool pool(threads);
  const std::size_t chunk_floats = kChunkBytes / sizeof(float);
  const auto n_chunks = static_cast<std::int64_t>(kBufferBytes / kChunkBytes);
  for (auto _ : state) {
    pool.ForEachChunk(n_chunks, [&](std::int64_t c) {
      benchmark::DoNotOptimize(kernels::StreamSum(buf.get() + c * chunk_floats, chunk_floats));
    });
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(kBufferBytes) *
                                                  static_cast<double>(state.iterations()) / 1e9,
                                              benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ReadBandwidth)->Arg(1)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();

// One thread's streaming sum of `bytes` at p.
double ReadMillis(const std::byte* p, std::size_t bytes) {
  core::Stopwatch watch;
  benchmark::DoNotOptimize(kernels::StreamSum(reinterpret_cast<const float*>(p), bytes / sizeof(float)));
  return watch.ElapsedMillis();
}

constexpr std::size_t kIdleBufferBytes = std::size_t{256} << 20;  // a small model's weights
constexpr int kIdleSeconds = 3;                                    // a decode node awaiting KV

void BM_ReadAfterIdle(benchmark::State& state) {
  const bool huge = state.range(0) == 1;
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> small;
  core::PageBuffer big;
  std::byte* p = nullptr;
  if (huge) {
    big = core::PageBuffer(kIdleBufferBytes);
    p = big.data();
  } else {
    small.reset(static_cast<std::byte*>(std::aligned_alloc(4096, kIdleBufferBytes)));
    p = small.get();
  }
  std::memset(p, 1, kIdleBufferBytes);  // resident before anything is timed
  // The penalty comes and goes with the host: report the mean and the worst of the iterations.
  double steady = 0, ratio_sum = 0, ratio_max = 0;
  for (auto _ : state) {
    for (int i = 0; i < 3; ++i) steady = ReadMillis(p, kIdleBufferBytes);
    std::this_thread::sleep_for(std::chrono::seconds(kIdleSeconds));
    const double after = ReadMillis(p, kIdleBufferBytes);
    state.SetIterationTime(after / 1e3);
    ratio_sum += after / steady;
    ratio_max = std::max(ratio_max, after / steady);
  }
  state.counters["steady_ms"] = steady;
  state.counters["after_idle_x"] = ratio_sum / static_cast<double>(state.iterations());
  state.counters["after_idle_x_max"] = ratio_max;
  state.SetLabel(huge ? "huge pages" : "4 KiB pages");
}
BENCHMARK(BM_ReadAfterIdle)->Arg(0)->Arg(1)->ArgName("huge")->Iterations(5)->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace smartgen::bench
