// Shared helpers of the kernel benchmarks: SmolLM2-135M shapes and random weights.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gguf/ggml_type.h"
#include "kernels/quant.h"

namespace smartgen::bench {

// SmolLM2-135M: n_embd 576, 9 heads / 3 KV heads of 64, FFN 1536, 30 layers, vocab 49152.
inline constexpr std::int64_t kEmbd = 576, kKvDim = 192, kFfn = 1536, kLayers = 30, kVocab = 49152,
                              kHeadDim = 64, kNq = 3;

struct MatShape {
  const char* name;
  std::int64_t rows, cols;
};
// The weight matrices of one layer (q, k, v, o, gate, up, down).
inline constexpr MatShape kLayerMats[] = {
    {"q", kEmbd, kEmbd},   {"k", kKvDim, kEmbd}, {"v", kKvDim, kEmbd}, {"o", kEmbd, kEmbd},
    {"gate", kFfn, kEmbd}, {"up", kFfn, kEmbd},  {"down", kEmbd, kFfn}};

inline std::vector<float> RandomFloats(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// rows x cols weights of `type`, random.
inline std::vector<std::byte> RandomWeights(gguf::GgmlType type, std::int64_t rows,
                                            std::int64_t cols, std::uint32_t seed) {
  const std::size_t rb = gguf::RowBytes(type, cols);
  std::vector<std::byte> out(rb * rows);
  std::vector<float> row = RandomFloats(cols, seed, 0.05f);
  for (std::int64_t r = 0; r < rows; ++r) {
    row[r % cols] += 0.01f;  // rows differ a little; the values do not matter
    kernels::QuantizeRow(type, row.data(), out.data() + r * rb, cols);
  }
  return out;
}

// Sets `ratio` (the median of per-turn ratios of a paired benchmark), `q1` and `q3` (its
// quartiles). ratios must not be empty.
inline void SetRatioCounters(benchmark::State& state, std::vector<double> ratios) {
  std::sort(ratios.begin(), ratios.end());
  state.counters["ratio"] = ratios[ratios.size() / 2];
  state.counters["q1"] = ratios[ratios.size() / 4];
  state.counters["q3"] = ratios[ratios.size() * 3 / 4];
}

// A paired benchmark's registration: milliseconds of real time, 3 s of turns at least.
inline void AsPaired(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3);
}

inline const char* TypeName(gguf::GgmlType t) {
  return gguf::GetTypeInfo(t).name.data();
}

}  // namespace smartgen::bench
