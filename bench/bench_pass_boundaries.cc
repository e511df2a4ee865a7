// What a pass boundary costs a decode step (docs/RESULTS.md, issue 14). One Q8_0 matrix of the
// Qwen2.5-0.5B output head's shape (151936 x 896, 145 MB, on huge pages) is multiplied by one
// token in turns two ways: as one pool job (kernels::MatMul, as Forward::ComputeLogits runs the
// head), and as a chain of kernels::TeamPass of `rows` rows each inside one pool job, as the team
// step chains a layer's passes (model/forward_team.cc). In the `wait` form each thread waits for
// every pass to finish before it starts the next one, prefetching the next pass meanwhile, as the
// team step must; in the `nowait` form the threads go straight on (the passes here do not depend
// on each other), so the chunk grid, lane claims and jumps between passes remain and the waits do
// not. In the `lanes` form the threads wait, and each pass is two products, a slice of the
// matrix's first half and the same slice of its second half, so that each thread's lane (lane 0
// the first product, lane 1 the second) continues in memory where its lane of the pass before
// ended: each thread reads one contiguous stream through the chain, as a weight layout ordered
// lane by lane across a layer's passes would give it. The last-level cache is flushed before each
// timed multiply. `ratio` is the median over the turns of the chain's rate over the single job's
// (q1, q3 its quartiles): set side by side, the forms tell the waits' share of a boundary, and the
// jump to a new stream's, from the rest.
//   build/bench/bench_kernels --benchmark_filter=BM_PassBoundaries
//   --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "bench_util.h"
#include "core/page_buffer.h"
#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/team_pass.h"

namespace smartgen::bench {
namespace {

constexpr std::int64_t kHeadRows = 151936, kHeadCols = 896;
constexpr std::size_t kFlushBytes = std::size_t{128} << 20;  // 4x the Zen 5 VM's L3

// Reads kFlushBytes, a line at a time, so that the next multiply starts from memory.
void FlushLastLevelCache() {
  static std::vector<std::uint8_t> junk(kFlushBytes, 1);
  unsigned sum = 0;
  for (std::size_t i = 0; i < junk.size(); i += 64) sum += junk[i];
  benchmark::DoNotOptimize(sum);
}

void BM_PassBoundaries(benchmark::State& state, std::int64_t rows, bool wait, bool lanes = false) {
  kernels::SetFastDot(true);  // the decode default
  const std::vector<std::byte> weights = RandomWeights(gguf::GgmlType::kQ8_0, kHeadRows, kHeadCols, 9);
  core::PageBuffer buffer(weights.size());
  std::memcpy(buffer.data(), weights.data(), weights.size());
  const kernels::WeightView whole{gguf::GgmlType::kQ8_0, buffer.data(), kHeadRows, kHeadCols};
  std::vector<kernels::WeightView> parts, second;
  if (!lanes) {
    for (std::int64_t r = 0; r < kHeadRows; r += rows) {
      parts.push_back({whole.type, whole.row(r), std::min(rows, kHeadRows - r), kHeadCols});
    }
  } else {
    const std::int64_t half = kHeadRows / 2, step = rows / 2;
    for (std::int64_t r = 0; r + step <= half; r += step) {
      parts.push_back({whole.type, whole.row(r), step, kHeadCols});
      second.push_back({whole.type, whole.row(half + r), step, kHeadCols});
    }
  }
  std::vector<kernels::TeamPass> passes(parts.size());
  core::ThreadPool pool(2);
  const std::vector<float> x = RandomFloats(kHeadCols, 1);
  std::vector<float> y(kHeadRows);
  const auto seconds_since = [](std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<double> ratios;
  for (auto _ : state) {
    FlushLastLevelCache();
    auto t0 = std::chrono::steady_clock::now();
    kernels::MatMul(whole, x.data(), 1, y.data(), &pool);
    const double single = seconds_since(t0);
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (lanes) {
        const kernels::MatJob job[] = {
            {&parts[i], nullptr, y.data() + i * rows / 2},
            {&second[i], nullptr, y.data() + kHeadRows / 2 + i * rows / 2}};
        passes[i].Reset(job, pool.size());
        continue;
      }
      const kernels::MatJob job[] = {{&parts[i], nullptr, y.data() + i * rows}};
      passes[i].Reset(job, pool.size());
    }
    FlushLastLevelCache();
    t0 = std::chrono::steady_clock::now();
    pool.Run([&](int, int) {
      for (std::size_t i = 0; i < parts.size(); ++i) {
        passes[i].Work([&] { return x.data(); });
        const bool last = i + 1 == parts.size();
        if (lanes) {
          passes[i].Wait(last ? kernels::NextPass{}
                              : kernels::NextPass{{&parts[i + 1], &second[i + 1]}});
          continue;
        }
        if (wait || last) passes[i].Wait(last ? kernels::NextPass{} : kernels::NextPass{{&parts[i + 1]}});
      }
    });
    ratios.push_back(single / seconds_since(t0));
    benchmark::DoNotOptimize(y.data());
  }
  kernels::SetFastDot(false);
  SetRatioCounters(state, ratios);
  state.counters["passes"] = static_cast<double>(parts.size());
}

[[maybe_unused]] const bool kPassBoundariesRegistered = [] {
  // 2374 and 4748 rows: 2.3 and 4.5 MB, a Qwen2.5-0.5B layer's q/k/v and down passes in size;
  // 1186 rows (1.1 MB): about a SmolLM2-135M Q8_0 pass (1.2 MB on average).
  for (const std::int64_t rows : {kHeadRows, std::int64_t{37984}, std::int64_t{9496},
                                  std::int64_t{4748}, std::int64_t{2374}, std::int64_t{1186}}) {
    for (const bool wait : {true, false}) {
      const std::string name = "BM_PassBoundaries/" + std::to_string(rows) + (wait ? "/wait" : "/nowait");
      AsPaired(benchmark::RegisterBenchmark(name.c_str(), BM_PassBoundaries, rows, wait, false));
    }
    if (rows == kHeadRows) continue;
    const std::string name = "BM_PassBoundaries/" + std::to_string(rows) + "/lanes";
    AsPaired(benchmark::RegisterBenchmark(name.c_str(), BM_PassBoundaries, rows, true, true));
  }
  return true;
}();

}  // namespace
}  // namespace smartgen::bench
