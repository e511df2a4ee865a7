// Memory read bandwidth: the floor under decode (every weight byte is read once per token).
// Streams a buffer far larger than the last-level cache with wide loads, split across a
// core::ThreadPool in 1 MiB chunks like the GEMV, and reports GB/s. Run e.g.
//   build/bench/bench_kernels --benchmark_filter=BM_ReadBandwidth --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

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

}  // namespace
}  // namespace smartgen::bench
