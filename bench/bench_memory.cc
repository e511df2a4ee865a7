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

#include "core/cpu_features.h"
#include "core/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace smartgen::bench {
namespace {

constexpr std::size_t kBufferBytes = std::size_t{1} << 30;  // 1 GiB: ~30x a Zen/Xeon L3
constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

#if defined(__x86_64__)
// Sum of n floats with four independent AVX2 accumulators (n % 32 == 0): the loads, not the
// adds, limit it.
__attribute__((target("avx2"))) float SumAvx2(const float* p, std::size_t n) {
  __m256 a = _mm256_setzero_ps(), b = a, c = a, d = a;
  for (std::size_t i = 0; i < n; i += 32) {
    a = _mm256_add_ps(a, _mm256_load_ps(p + i));
    b = _mm256_add_ps(b, _mm256_load_ps(p + i + 8));
    c = _mm256_add_ps(c, _mm256_load_ps(p + i + 16));
    d = _mm256_add_ps(d, _mm256_load_ps(p + i + 24));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d)));
  float s = 0;
  for (float v : lanes) s += v;
  return s;
}
#endif

float SumPortable(const float* p, std::size_t n) {
  float part[8] = {};
  for (std::size_t i = 0; i < n; i += 8) {
    for (int j = 0; j < 8; ++j) part[j] += p[i + j];
  }
  float s = 0;
  for (float v : part) s += v;
  return s;
}

float Sum(const float* p, std::size_t n) {
#if defined(__x86_64__)
  if (core::GetCpuFeatures().HasAvx2()) return SumAvx2(p, n);
#endif
  return SumPortable(p, n);
}

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
      benchmark::DoNotOptimize(Sum(buf.get() + c * chunk_floats, chunk_floats));
    });
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(kBufferBytes) *
                                                  static_cast<double>(state.iterations()) / 1e9,
                                              benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ReadBandwidth)->Arg(1)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace smartgen::bench
