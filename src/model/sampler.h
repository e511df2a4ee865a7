// Sampler: picks the next token from logits.
//
//   temperature <= 0    - greedy: argmax, the lowest id winning ties (as llama.cpp).
//   otherwise           - softmax(logits / temperature), restricted to the top_k most likely
//                         (0 = all), then to the smallest set whose mass reaches top_p
//                         (1 = all), then one draw from a generator seeded with (seed, step).
// Step i's draw depends only on the seed and i, not on earlier draws, so a decode node that
// continues a sequence whose first token was sampled on the prefill node (Sampler(params, 1))
// draws exactly what a single process would. Not thread-safe (counts steps).
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
  // `first_step` is the index of the first token this sampler draws (0 for a fresh sequence).
  explicit Sampler(SamplingParams params, std::int64_t first_step = 0);
  // Picks token `step()` and advances the step.
  std::int32_t Sample(std::span<const float> logits);
  const SamplingParams& params() const { return params_; }
  std::int64_t step() const { return step_; }

 private:
  SamplingParams params_;
  std::int64_t step_;
  std::vector<std::pair<float, std::int32_t>> candidates_;  // scratch
};

// Argmax with the lowest id winning ties.
std::int32_t Greedy(std::span<const float> logits);

}  // namespace smartgen::model
