// The matrix passes of one decode step as the team step chains them (model/forward_team.cc): one
// pool job in which the threads run q/k/v as one kernels::TeamPass, then o, gate/up (two plain
// products) and down, for each layer, each thread prefetching the next pass while it waits for
// the others; then the output head as a pool job of its own (Forward::ComputeLogits). No
// attention, norms, RoPE or KV store: what is left is the pass structure (chunk grid, lane
// claims, waits) around the GEMV kernels, at the SmolLM2-135M or Qwen2.5-0.5B shapes, with the
// weights in one huge-page buffer as a loaded model keeps them. Set against
// BM_ReadBandwidth/threads:2 in the same run, its GB/s is the most of the bandwidth floor that a
// decode step built from these passes can reach (docs/RESULTS.md, issue 14):
//   build/bench/bench_kernels --benchmark_filter='BM_ReadBandwidth/threads:2|BM_DecodeTeamPasses/'
//     --benchmark_repetitions=5
// layers_GB/s and head_GB/s split the step: the layers' chained passes, the output head's job.
// BM_DecodeTeamPassesPair runs two types' steps in turn, to compare kernels through the swings;
// BM_DecodeTeamPassesLayout the step with its gate/up pass laid out two ways in turn (below);
// BM_GroupedWeights the step on regrouped Q5_0 or Q8_0 weights and on the file's layout in turn.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "bench_util.h"
#include "core/page_buffer.h"
#include "core/thread_pool.h"
#include "kernels/elementwise.h"
#include "kernels/matmul.h"
#include "kernels/matmul_pass.h"
#include "kernels/q5_0_groups.h"
#include "kernels/q8_0_groups.h"
#include "kernels/row_streams.h"
#include "kernels/team_pass.h"

namespace smartgen::bench {
namespace {

using gguf::GgmlType;
using kernels::MatJob;
using kernels::NextPass;
using kernels::WeightView;

// A model's matrix shapes: SmolLM2-135M (bench_util.h) or Qwen2.5-0.5B (n_embd 896, 2 KV heads
// of 64, FFN 4864, 24 layers, vocab 151936).
struct StepShape {
  const char* name;
  std::int64_t embd, kv_dim, ffn, layers, vocab;
};
constexpr StepShape kSmolLm2{"smollm2", kEmbd, kKvDim, kFfn, kLayers, kVocab};
constexpr StepShape kQwen05{"qwen0.5b", 896, 128, 4864, 24, 151936};

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

// regroup: Q5_0 and Q8_0 matrices regrouped for the VNNI GEMV, as a model loaded into huge pages
// has them (q5_0_groups.h, q8_0_groups.h).
ModelWeights MakeModelWeights(const StepShape& shape, GgmlType type, bool regroup = false) {
  const std::int64_t e = shape.embd, kv = shape.kv_dim, f = shape.ffn;
  const MatShape layer_mats[] = {{"q", e, e},    {"k", kv, e}, {"v", kv, e}, {"o", e, e},
                                 {"gate", f, e}, {"up", f, e}, {"down", e, f}};
  std::vector<std::vector<std::byte>> mats;
  for (int l = 0; l < shape.layers; ++l) {
    for (const MatShape& s : layer_mats) mats.push_back(RandomWeights(type, s.rows, s.cols, 300 + l));
  }
  mats.push_back(RandomWeights(type, shape.vocab, e, 9));
  ModelWeights m;
  for (const auto& bytes : mats) m.bytes += bytes.size();
  m.buffer = core::PageBuffer(m.bytes);
  std::size_t at = 0, i = 0;
  const auto place = [&](std::int64_t rows, std::int64_t cols) {
    std::byte* data = m.buffer.data() + at;
    std::memcpy(data, mats[i].data(), mats[i].size());
    WeightView view{type, data, rows, cols};
    if (regroup && type == GgmlType::kQ5_0) {
      kernels::GroupQ5_0Rows(data, rows, cols);
      view.layout = kernels::WeightLayout::kQ5_0Groups;
    }
    if (regroup && type == GgmlType::kQ8_0) {
      kernels::GroupQ8_0Rows(data, rows, cols);
      view.layout = kernels::WeightLayout::kQ8_0Groups;
    }
    at += mats[i++].size();
    return view;
  };
  for (int l = 0; l < shape.layers; ++l) {
    LayerViews v;
    WeightView* order[] = {&v.q, &v.k, &v.v, &v.o, &v.gate, &v.up, &v.down};
    for (std::size_t j = 0; j < std::size(layer_mats); ++j) {
      *order[j] = place(layer_mats[j].rows, layer_mats[j].cols);
    }
    m.layers.push_back(v);
  }
  m.output = place(shape.vocab, e);
  return m;
}

// How a step's gate/up pass is laid out: as the team step runs it, gate and up as two plain
// products in one pass (each lane reads one matrix front to back) and the activation applied by
// each thread to its own copy for the down pass; or as one gated product (each chunk reads the
// same rows of gate and then of up, as MatMulSwiGlu does), the team step's layout until 12-05.
enum class GateUp { kPlain, kGated };

// One decode step's matrix passes over `m`, as the team step chains them; the inputs are fixed
// vectors (no norm or attention makes them), the outputs the step's own.
class TeamPasses {
 public:
  TeamPasses(const StepShape& shape, const ModelWeights& m, core::ThreadPool* pool,
             GateUp gate_up = GateUp::kPlain)
      : m_(m), pool_(pool), layers_(static_cast<int>(shape.layers)), gate_up_(gate_up) {
    const auto e = static_cast<std::size_t>(shape.embd);
    h_ = RandomFloats(e, 1);
    att_ = RandomFloats(e, 2);
    q_.resize(e);
    k_.resize(static_cast<std::size_t>(shape.kv_dim));
    v_.resize(static_cast<std::size_t>(shape.kv_dim));
    x_.resize(e);
    gate_.resize(static_cast<std::size_t>(shape.ffn));
    up_.resize(static_cast<std::size_t>(shape.ffn));
    logits_.resize(static_cast<std::size_t>(shape.vocab));
    passes_ = std::vector<kernels::TeamPass>(static_cast<std::size_t>(layers_) * 4);
  }

  // One step; returns the seconds its layers took (the rest is the output head).
  double Run() {
    const auto t0 = std::chrono::steady_clock::now();
    const int lanes = pool_->size();
    for (int l = 0; l < layers_; ++l) {
      const LayerViews& w = m_.layers[l];
      kernels::TeamPass* p = &passes_[static_cast<std::size_t>(l) * 4];
      const MatJob qkv[] = {{&w.k, nullptr, k_.data()}, {&w.v, nullptr, v_.data()},
                            {&w.q, nullptr, q_.data()}};
      p[0].Reset(qkv, lanes);
      const MatJob o[] = {{&w.o, nullptr, x_.data(), /*accumulate=*/true}};
      p[1].Reset(o, lanes);
      if (gate_up_ == GateUp::kGated) {
        p[2].ResetGated(w.gate, w.up, gate_.data(), /*gelu=*/false, lanes);
      } else {
        const MatJob gate_up[] = {{&w.gate, nullptr, gate_.data()}, {&w.up, nullptr, up_.data()}};
        p[2].Reset(gate_up, lanes);
      }
      const MatJob down[] = {{&w.down, nullptr, x_.data(), /*accumulate=*/true}};
      p[3].Reset(down, lanes);
    }
    const bool gated = gate_up_ == GateUp::kGated;
    pool_->Run([&](int, int) {
      thread_local std::vector<float> down_in;
      down_in.resize(gate_.size());
      const auto down_input = [&]() -> const float* {
        if (gated) return gate_.data();
        kernels::SwiGlu(gate_.data(), up_.data(), static_cast<std::int64_t>(gate_.size()), down_in.data());
        return down_in.data();
      };
      for (int l = 0; l < layers_; ++l) {
        const LayerViews& w = m_.layers[l];
        kernels::TeamPass* p = &passes_[static_cast<std::size_t>(l) * 4];
        p[0].Work([&] { return h_.data(); });
        p[0].Wait({{&w.o}});
        p[1].Work([&] { return att_.data(); });
        p[1].Wait(gated ? NextPass{{&w.gate}, &w.up} : NextPass{{&w.gate, &w.up}});
        p[2].Work([&] { return h_.data(); });
        p[2].Wait({{&w.down}});
        p[3].Work(down_input);
        p[3].Wait(NextQkv(l + 1));
      }
    });
    const auto t1 = std::chrono::steady_clock::now();
    kernels::MatMul(m_.output, h_.data(), 1, logits_.data(), pool_, NextQkv(0));
    benchmark::DoNotOptimize(logits_.data());
    benchmark::DoNotOptimize(x_.data());
    return std::chrono::duration<double>(t1 - t0).count();
  }

 private:
  NextPass NextQkv(int l) const {
    if (l >= layers_) return {{&m_.output}};
    return {{&m_.layers[l].k, &m_.layers[l].v, &m_.layers[l].q}};
  }

  const ModelWeights& m_;
  core::ThreadPool* pool_;
  int layers_;
  GateUp gate_up_;
  std::vector<float> h_, att_, q_, k_, v_, x_, gate_, up_, logits_;
  std::vector<kernels::TeamPass> passes_;
};

void BM_DecodeTeamPasses(benchmark::State& state, const StepShape& shape, GgmlType type) {
  kernels::SetFastDot(true);  // the decode default
  const ModelWeights m = MakeModelWeights(shape, type);
  core::ThreadPool pool(2);
  TeamPasses step(shape, m, &pool);
  double layer_seconds = 0, head_seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const double layers = step.Run();
    layer_seconds += layers;
    head_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() - layers;
  }
  kernels::SetFastDot(false);
  const auto iterations = static_cast<double>(state.iterations());
  const double head_bytes = static_cast<double>(m.output.rows) * static_cast<double>(m.output.row_bytes());
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(m.bytes) * iterations / 1e9,
                                              benchmark::Counter::kIsRate);
  state.counters["layers_GB/s"] = (static_cast<double>(m.bytes) - head_bytes) * iterations / layer_seconds / 1e9;
  state.counters["head_GB/s"] = head_bytes * iterations / head_seconds / 1e9;
  state.counters["tok/s"] = benchmark::Counter(state.iterations(), benchmark::Counter::kIsRate);
  state.counters["MB"] = static_cast<double>(m.bytes) / 1e6;
}

// Runs a's step and then b's, once per iteration; returns each turn's b time over a time (a's
// tokens/s over b's) and adds the times to *seconds_a and *seconds_b.
std::vector<double> RunInTurns(benchmark::State& state, TeamPasses& a, TeamPasses& b,
                               double* seconds_a, double* seconds_b) {
  std::vector<double> ratios;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    a.Run();
    const auto t1 = std::chrono::steady_clock::now();
    b.Run();
    const auto t2 = std::chrono::steady_clock::now();
    const double da = std::chrono::duration<double>(t1 - t0).count();
    const double db = std::chrono::duration<double>(t2 - t1).count();
    *seconds_a += da;
    *seconds_b += db;
    ratios.push_back(db / da);
  }
  return ratios;
}

// Two weight types' steps in lockstep, one token of each per turn, so that the VM's swings in
// read bandwidth (1.5x within minutes on the Zen 5 VM) fall on both: `ratio` is the median over
// the turns of a's tokens/s over b's. With b a control whose kernel did not change (BF16 for an
// F16 kernel change), the ratio of two builds' ratios compares the builds.
void BM_DecodeTeamPassesPair(benchmark::State& state, GgmlType a, GgmlType b) {
  kernels::SetFastDot(true);
  const ModelWeights ma = MakeModelWeights(kSmolLm2, a), mb = MakeModelWeights(kSmolLm2, b);
  core::ThreadPool pool(2);
  TeamPasses step_a(kSmolLm2, ma, &pool), step_b(kSmolLm2, mb, &pool);
  double seconds_a = 0, seconds_b = 0;
  const std::vector<double> ratios = RunInTurns(state, step_a, step_b, &seconds_a, &seconds_b);
  kernels::SetFastDot(false);
  const auto turns = static_cast<double>(ratios.size());
  state.counters["a_GB/s"] = static_cast<double>(ma.bytes) * turns / seconds_a / 1e9;
  state.counters["b_GB/s"] = static_cast<double>(mb.bytes) * turns / seconds_b / 1e9;
  SetRatioCounters(state, ratios);
}

// The step on regrouped weights and on the file's layout, in turns (Q5_0, Q8_0: the VNNI GEMV on
// either layout): `ratio` is the median over the turns of the regrouped step's tokens/s over the
// file layout's; grouped_GB/s and file_GB/s each one's weight stream.
void BM_GroupedWeights(benchmark::State& state, const StepShape& shape, GgmlType type) {
  kernels::SetFastDot(true);
  const ModelWeights file = MakeModelWeights(shape, type),
                     grouped = MakeModelWeights(shape, type, true);
  core::ThreadPool pool(2);
  TeamPasses step_file(shape, file, &pool), step_grouped(shape, grouped, &pool);
  double seconds_grouped = 0, seconds_file = 0;
  const std::vector<double> ratios =
      RunInTurns(state, step_grouped, step_file, &seconds_grouped, &seconds_file);
  kernels::SetFastDot(false);
  const auto turns = static_cast<double>(ratios.size());
  state.counters["grouped_GB/s"] =
      static_cast<double>(grouped.bytes) * turns / seconds_grouped / 1e9;
  state.counters["file_GB/s"] = static_cast<double>(file.bytes) * turns / seconds_file / 1e9;
  SetRatioCounters(state, ratios);
}

// The step with either gate/up layout, in turns on the same weights: `ratio` is the median over
// the turns of the plain layout's tokens/s over the gated one's.
void BM_DecodeTeamPassesLayout(benchmark::State& state, const StepShape& shape, GgmlType type) {
  kernels::SetFastDot(true);
  const ModelWeights m = MakeModelWeights(shape, type);
  core::ThreadPool pool(2);
  TeamPasses plain(shape, m, &pool, GateUp::kPlain), gated(shape, m, &pool, GateUp::kGated);
  double seconds_plain = 0, seconds_gated = 0;
  const std::vector<double> ratios = RunInTurns(state, plain, gated, &seconds_plain, &seconds_gated);
  kernels::SetFastDot(false);
  SetRatioCounters(state, ratios);
}

// The step with its GEMVs reading every chunk as one stream, as two streams (row_streams.h) from
// the smallest chunks up, and as two streams from kernels::internal::kMinTwoStreamBytes up (the
// default), one step of each per turn, starting one further along each turn: counters two_all and
// two_default are the medians over the turns of those orders' tokens/s over one stream's.
void BM_RowStreams(benchmark::State& state, const StepShape& shape, GgmlType type) {
  kernels::SetFastDot(true);
  const ModelWeights m = MakeModelWeights(shape, type);
  core::ThreadPool pool(2);
  TeamPasses step(shape, m, &pool);
  constexpr std::size_t kMinBytes[] = {SIZE_MAX, 0, kernels::internal::kMinTwoStreamBytes};
  std::vector<double> all, by_default;
  std::size_t turn = 0;
  for (auto _ : state) {
    double seconds[3];
    for (std::size_t j = 0; j < 3; ++j) {
      const std::size_t i = (turn + j) % 3;
      kernels::internal::SetMinTwoStreamBytes(kMinBytes[i]);
      const auto t0 = std::chrono::steady_clock::now();
      step.Run();
      seconds[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    all.push_back(seconds[0] / seconds[1]);
    by_default.push_back(seconds[0] / seconds[2]);
    ++turn;
  }
  kernels::internal::SetMinTwoStreamBytes(kernels::internal::kMinTwoStreamBytes);
  kernels::SetFastDot(false);
  std::sort(all.begin(), all.end());
  std::sort(by_default.begin(), by_default.end());
  state.counters["two_all"] = all[all.size() / 2];
  state.counters["two_default"] = by_default[by_default.size() / 2];
}

// The step with its single-token passes cut and claimed as by default (kVecChunksPerThread chunks
// per thread, own-lane runs of up to kVecRunBytes and kVecMaxRun chunks; matmul_pass.h) and in
// other ways (`kWays`: chunks per thread, most chunks and bytes per run;
// kernels::internal::SetVecChunking), one step of each per turn, starting one further along each
// turn, on weights laid out as a loaded model has them. Counters: the medians over the turns of
// each way's tokens/s over the default's; "c4run1" is the chunking until 2026-12-06 (4 chunks per
// thread, one claimed at a time), "whole" runs of 15 chunks whatever their bytes.
void BM_ChunksPerThread(benchmark::State& state, const StepShape& shape, GgmlType type) {
  struct Way {
    const char* name;
    int chunks, run;
    std::size_t run_bytes;
  };
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  constexpr Way kWays[] = {{"default", kernels::internal::kVecChunksPerThread,
                            kernels::internal::kVecMaxRun, kernels::internal::kVecRunBytes},
                           {"c4run1", 4, 1, SIZE_MAX},
                           {"c16run1", 16, 1, SIZE_MAX},
                           {"run4", 16, 4, SIZE_MAX},
                           {"run1M", 16, 15, kMiB},
                           {"whole", 16, 15, SIZE_MAX}};
  constexpr std::size_t kN = std::size(kWays);
  kernels::SetFastDot(true);
  const ModelWeights m = MakeModelWeights(shape, type, /*regroup=*/true);
  core::ThreadPool pool(2);
  TeamPasses step(shape, m, &pool);
  std::vector<double> ratios[kN];
  std::size_t turn = 0;
  for (auto _ : state) {
    double seconds[kN];
    for (std::size_t j = 0; j < kN; ++j) {
      const std::size_t i = (turn + j) % kN;
      kernels::internal::SetVecChunking(kWays[i].chunks, kWays[i].run, kWays[i].run_bytes);
      const auto t0 = std::chrono::steady_clock::now();
      step.Run();
      seconds[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    for (std::size_t i = 1; i < kN; ++i) ratios[i].push_back(seconds[0] / seconds[i]);
    ++turn;
  }
  kernels::internal::SetVecChunking(kernels::internal::kVecChunksPerThread,
                                    kernels::internal::kVecMaxRun, kernels::internal::kVecRunBytes);
  kernels::SetFastDot(false);
  for (std::size_t i = 1; i < kN; ++i) {
    std::sort(ratios[i].begin(), ratios[i].end());
    state.counters[kWays[i].name] = ratios[i][ratios[i].size() / 2];
  }
}

[[maybe_unused]] const bool kTeamPassesRegistered = [] {
  for (const StepShape* shape : {&kSmolLm2, &kQwen05}) {
    for (const GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0,
                                GgmlType::kQ4_0}) {
      const std::string name = std::string("BM_DecodeTeamPasses/") + shape->name + "/" + TypeName(type);
      benchmark::RegisterBenchmark(name.c_str(), BM_DecodeTeamPasses, *shape, type)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
  for (const StepShape* shape : {&kSmolLm2, &kQwen05}) {
    for (const GgmlType type : {GgmlType::kF16, GgmlType::kQ8_0}) {
      const std::string name =
          std::string("BM_DecodeTeamPassesLayout/") + shape->name + "/" + TypeName(type);
      AsPaired(benchmark::RegisterBenchmark(name.c_str(), BM_DecodeTeamPassesLayout, *shape, type));
    }
  }
  for (const StepShape* shape : {&kSmolLm2, &kQwen05}) {
    for (const GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ4_0}) {
      const std::string name = std::string("BM_RowStreams/") + shape->name + "/" + TypeName(type);
      AsPaired(benchmark::RegisterBenchmark(name.c_str(), BM_RowStreams, *shape, type));
    }
  }
  for (const StepShape* shape : {&kSmolLm2, &kQwen05}) {
    for (const GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ5_0}) {
      const std::string name =
          std::string("BM_GroupedWeights/") + shape->name + "/" + TypeName(type);
      AsPaired(benchmark::RegisterBenchmark(name.c_str(), BM_GroupedWeights, *shape, type));
    }
  }
  for (const StepShape* shape : {&kSmolLm2, &kQwen05}) {
    for (const GgmlType type : {GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ4_K}) {
      const std::string name =
          std::string("BM_ChunksPerThread/") + shape->name + "/" + TypeName(type);
      AsPaired(benchmark::RegisterBenchmark(name.c_str(), BM_ChunksPerThread, *shape, type));
    }
  }
  AsPaired(benchmark::RegisterBenchmark("BM_DecodeTeamPassesPair/f16/bf16", BM_DecodeTeamPassesPair,
                                        GgmlType::kF16, GgmlType::kBF16));
  return true;
}();

}  // namespace
}  // namespace smartgen::bench
