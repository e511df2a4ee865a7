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
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

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

// The same 512 MiB huge-page buffer read by two threads in several patterns, in turns: blocks
// handed out in order to whichever thread asks ("dyn_<size>"; dyn_1m is how
// kernels::MeasureReadBandwidth reads), and blocks dealt out in turn, block b to thread b % 2
// ("static_<size>"; static_half gives each thread one contiguous half, as a decode pass's
// lanes). Counters: each pattern's median GB/s over the turns, and `skew`, the median over the
// static patterns' turns of the slower thread's time over the faster one's: on the 2-vCPU AMD
// EPYC VM the two threads read at rates 1.14-1.25x apart, so the dynamic patterns, where the
// faster thread reads more, beat the static ones by about as much (docs/RESULTS.md, issue 14).
//   build/bench/bench_kernels --benchmark_filter=BM_ReadPatterns
void BM_ReadPatterns(benchmark::State& state) {
  constexpr std::size_t kBytes = std::size_t{512} << 20;
  core::PageBuffer buf(kBytes);
  buf.Prefault();
  const float* base = reinterpret_cast<const float*>(buf.data());
  const auto read_block = [&](std::size_t b, std::size_t block) {
    benchmark::DoNotOptimize(
        kernels::StreamSum(base + b * (block / sizeof(float)), block / sizeof(float)));
  };
  core::ThreadPool pool(2);
  std::vector<double> skew;
  const auto dealt = [&](std::size_t block) {
    double ms[2] = {0, 0};
    pool.Run([&](int t, int nt) {
      core::Stopwatch watch;
      for (auto b = static_cast<std::size_t>(t); b * block < kBytes;
           b += static_cast<std::size_t>(nt)) {
        read_block(b, block);
      }
      ms[t % 2] = watch.ElapsedMillis();
    });
    skew.push_back(std::max(ms[0], ms[1]) / std::min(ms[0], ms[1]));
  };
  const auto dynamic = [&](std::size_t block) {
    pool.ForEachChunk(static_cast<std::int64_t>(kBytes / block),
                      [&](std::int64_t c) { read_block(static_cast<std::size_t>(c), block); });
  };
  struct Pattern {
    const char* name;
    bool dynamic;
    std::size_t block;
  };
  constexpr std::size_t kKiB = 1024, kMiB = kKiB * 1024;
  const Pattern patterns[] = {{"dyn_1m", true, kMiB},           {"dyn_256k", true, 256 * kKiB},
                              {"dyn_4m", true, 4 * kMiB},       {"static_half", false, kBytes / 2},
                              {"static_64k", false, 64 * kKiB}, {"static_1m", false, kMiB},
                              {"static_4m", false, 4 * kMiB},   {"static_32m", false, 32 * kMiB}};
  constexpr int kPatterns = static_cast<int>(std::size(patterns));
  std::vector<double> rates[kPatterns];
  int turn = 0;
  for (auto _ : state) {
    for (int i = 0; i < kPatterns; ++i) {
      const int p = (i + turn) % kPatterns;
      core::Stopwatch watch;
      if (patterns[p].dynamic) {
        dynamic(patterns[p].block);
      } else {
        dealt(patterns[p].block);
      }
      rates[p].push_back(static_cast<double>(kBytes) / (watch.ElapsedMillis() * 1e6));
    }
    ++turn;
  }
  for (int p = 0; p < kPatterns; ++p) {
    std::sort(rates[p].begin(), rates[p].end());
    state.counters[patterns[p].name] = rates[p][rates[p].size() / 2];
  }
  std::sort(skew.begin(), skew.end());
  state.counters["skew"] = skew[skew.size() / 2];
}
BENCHMARK(BM_ReadPatterns)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3);

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
