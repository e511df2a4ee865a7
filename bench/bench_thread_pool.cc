// Thread-pool handoff: the cost of one parallel pass with (almost) no work in it, which a decode
// step pays once per fused matrix product (about four per layer). Time per iteration is one pass.
//   build/bench/bench_kernels --benchmark_filter=BM_PoolHandoff
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>

#include "core/thread_pool.h"

namespace smartgen::bench {
namespace {

// A pass of `chunks` chunks, each touching one counter: handoff, claims and the final wait.
void BM_PoolHandoff(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const std::int64_t chunks = state.range(1);
  core::ThreadPool pool(threads);
  std::atomic<std::int64_t> sink{0};
  for (auto _ : state) {
    pool.ForEachChunk(chunks, [&](std::int64_t c) { sink.fetch_add(c, std::memory_order_relaxed); });
  }
  benchmark::DoNotOptimize(sink.load());
}
BENCHMARK(BM_PoolHandoff)->Args({2, 2})->Args({2, 8})->Args({2, 32})->UseRealTime();

}  // namespace
}  // namespace smartgen::bench
