// The matrix passes of one decode step as the team step chains them (model/forward_team.cc): one
// pool job in which the threads run q/k/v as one kernels::TeamPass, then o, gate/up (gated) and
// down, for each of 30 layers, each thread prefetching the next pass while it waits for the
// others; then the output head as a pool job of its own (Forward::ComputeLogits). No attention,
// norms, RoPE or KV store: what is left is the pass structure (chunk grid, lane claims, waits)
// around the GEMV kernels, at the SmolLM2-135M shapes, with the weights in one huge-page buffer
// as a loaded model keeps them. Set against BM_ReadBandwidth/threads:2 in the same run, its GB/s
// is the most of the bandwidth floor that a decode step built from these passes can reach
// (docs/RESULTS.md, issue 14):
//   build/bench/bench_kernels --benchmark_filter='BM_ReadBandwidth/threads:2|BM_DecodeTeamPasses/'
//     --benchmark_repetitions=5
// BM_DecodeTeamPassesPair runs two types' steps in turn, to compare kernels through the swings.
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

using gguf::GgmlType;
using kernels::MatJob;
using kernels::NextPass;
using kernels::WeightView;

// One layer's matrices, in kLayerMats' order.
struct LayerViews {
  WeightView q, k, v, o, gate, up, down;
};

// Every matrix of the model, laid out one after another in `buffer`.
struct ModelWeights {
  core::PageBuffer buffer;
  std::vector<LayerViews> layers;
  WeightView output;
  std::size_t bytes = 0;
};

ModelWeights MakeModelWeights(GgmlType type) {
  std::vector<std::vector<std::byte>> mats;
  for (int l = 0; l < kLayers; ++l) {
    for (const MatShape& s : kLayerMats) mats.push_back(RandomWeights(type, s.rows, s.cols, 300 + l));
  }
  mats.push_back(RandomWeights(type, kVocab, kEmbd, 9));
  ModelWeights m;
  for (const auto& bytes : mats) m.bytes += bytes.size();
  m.buffer = core::PageBuffer(m.bytes);
  std::size_t at = 0, i = 0;
  const auto place = [&](std::int64_t rows, std::int64_t cols) {
    std::memcpy(m.buffer.data() + at, mats[i].data(), mats[i].size());
    const WeightView view{type, m.buffer.data() + at, rows, cols};
    at += mats[i++].size();
    return view;
  };
  for (int l = 0; l < kLayers; ++l) {
    LayerViews v;
    WeightView* order[] = {&v.q, &v.k, &v.v, &v.o, &v.gate, &v.up, &v.down};
    for (std::size_t j = 0; j < std::size(kLayerMats); ++j) {
      *order[j] = place(kLayerMats[j].rows, kLayerMats[j].cols);
    }
    m.layers.push_back(v);
  }
  m.output = place(kVocab, kEmbd);
  return m;
}

// One decode step's matrix passes over `m`, as the team step chains them; the inputs are fixed
// vectors (no norm or attention makes them), the outputs the step's own.
class TeamPasses {
 public:
  TeamPasses(const ModelWeights& m, core::ThreadPool* pool) : m_(m), pool_(pool) {}

  void Run() {
    const int lanes = pool_->size();
    for (int l = 0; l < kLayers; ++l) {
      const LayerViews& w = m_.layers[l];
      kernels::TeamPass* p = &passes_[static_cast<std::size_t>(l) * 4];
      const MatJob qkv[] = {{&w.k, nullptr, k_.data()}, {&w.v, nullptr, v_.data()},
                            {&w.q, nullptr, q_.data()}};
      p[0].Reset(qkv, lanes);
      const MatJob o[] = {{&w.o, nullptr, x_.data(), /*accumulate=*/true}};
      p[1].Reset(o, lanes);
      p[2].ResetGated(w.gate, w.up, gate_.data(), /*gelu=*/false, lanes);
      const MatJob down[] = {{&w.down, nullptr, x_.data(), /*accumulate=*/true}};
      p[3].Reset(down, lanes);
    }
    pool_->Run([&](int, int) {
      for (int l = 0; l < kLayers; ++l) {
        const LayerViews& w = m_.layers[l];
        kernels::TeamPass* p = &passes_[static_cast<std::size_t>(l) * 4];
        p[0].Work([&] { return h_.data(); });
        p[0].Wait({{&w.o}});
        p[1].Work([&] { return att_.data(); });
        p[1].Wait({{&w.gate}, &w.up});
        p[2].Work([&] { return h_.data(); });
        p[2].Wait({{&w.down}});
        p[3].Work([&] { return gate_.data(); });
        p[3].Wait(NextQkv(l + 1));
      }
    });
    kernels::MatMul(m_.output, h_.data(), 1, logits_.data(), pool_, NextQkv(0));
    benchmark::DoNotOptimize(logits_.data());
    benchmark::DoNotOptimize(x_.data());
  }

 private:
  NextPass NextQkv(int l) const {
    if (l >= kLayers) return {{&m_.output}};
    return {{&m_.layers[l].k, &m_.layers[l].v, &m_.layers[l].q}};
  }

  const ModelWeights& m_;
  core::ThreadPool* pool_;
  std::vector<float> h_ = RandomFloats(kEmbd, 1), att_ = RandomFloats(kEmbd, 2);
  std::vector<float> q_ = std::vector<float>(kEmbd), k_ = std::vector<float>(kKvDim),
                     v_ = std::vector<float>(kKvDim), x_ = std::vector<float>(kEmbd),
                     gate_ = std::vector<float>(kFfn), logits_ = std::vector<float>(kVocab);
  std::vector<kernels::TeamPass> passes_ = std::vector<kernels::TeamPass>(kLayers * 4);
};

void BM_DecodeTeamPasses(benchmark::State& state, GgmlType type) {
  kernels::SetFastDot(true);  // the decode default
  const ModelWeights m = MakeModelWeights(type);
  core::ThreadPool pool(2);
  TeamPasses step(m, &pool);
  for (auto _ : state) step.Run();
  kernels::SetFastDot(false);
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(m.bytes) * state.iterations() / 1e9,
                                              benchmark::Counter::kIsRate);
  state.counters["tok/s"] = benchmark::Counter(state.iterations(), benchmark::Counter::kIsRate);
  state.counters["MB"] = static_cast<double>(m.bytes) / 1e6;
}

// Two weight types' steps in lockstep, one token of each per turn, so that the VM's swings in
// read bandwidth (1.5x within minutes on the Zen 5 VM) fall on both: `ratio` is the median over
// the turns of a's tokens/s over b's. With b a control whose kernel did not change (BF16 for an
// F16 kernel change), the ratio of two builds' ratios compares the builds.
void BM_DecodeTeamPassesPair(benchmark::State& state, GgmlType a, GgmlType b) {
  kernels::SetFastDot(true);
  const ModelWeights ma = MakeModelWeights(a), mb = MakeModelWeights(b);
  core::ThreadPool pool(2);
  TeamPasses step_a(ma, &pool), step_b(mb, &pool);
  double seconds_a = 0, seconds_b = 0;
  std::vector<double> ratios;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    step_a.Run();
    const auto t1 = std::chrono::steady_clock::now();
    step_b.Run();
    const auto t2 = std::chrono::steady_clock::now();
    const double da = std::chrono::duration<double>(t1 - t0).count();
    const double db = std::chrono::duration<double>(t2 - t1).count();
    seconds_a += da;
    seconds_b += db;
    ratios.push_back(db / da);
  }
  kernels::SetFastDot(false);
  std::sort(ratios.begin(), ratios.end());
  const auto turns = static_cast<double>(ratios.size());
  state.counters["a_GB/s"] = static_cast<double>(ma.bytes) * turns / seconds_a / 1e9;
  state.counters["b_GB/s"] = static_cast<double>(mb.bytes) * turns / seconds_b / 1e9;
  state.counters["ratio"] = ratios[ratios.size() / 2];
}

[[maybe_unused]] const bool kTeamPassesRegistered = [] {
  for (const GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0,
                              GgmlType::kQ4_0}) {
    benchmark::RegisterBenchmark(("BM_DecodeTeamPasses/" + std::string(TypeName(type))).c_str(),
                                 BM_DecodeTeamPasses, type)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  benchmark::RegisterBenchmark("BM_DecodeTeamPassesPair/f16/bf16", BM_DecodeTeamPassesPair,
                               GgmlType::kF16, GgmlType::kBF16)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->MinTime(3);
  return true;
}();

}  // namespace
}  // namespace smartgen::bench
