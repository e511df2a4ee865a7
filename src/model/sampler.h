// Sampler: picks the next token from logits.
//
//   temperature <= 0    - greedy: argmax, the lowest id winning ties (as llama.cpp).
//   otherwise           - softmax(logits / temperature), restricted to the top_k most likely
//                         (0 = all), then to the smallest set whose mass reaches top_p
//                         (1 = all), then one draw from a generator seeded with `seed`.
// The same seed and logits give the same tokens. Not thread-safe (owns its generator).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace smartgen::model {

struct SamplingParams {
  float temperature = 0.0f;
  int top_k = 0;
  float top_p = 1.0f;
  std::uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(SamplingParams params);
  std::int32_t Sample(std::span<const float> logits);
  const SamplingParams& params() const { return params_; }

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, std::int32_t>> candidates_;  // scratch
};

// Argmax with the lowest id winning ties.
std::int32_t Greedy(std::span<const float> logits);

}  // namespace smartgen::model
