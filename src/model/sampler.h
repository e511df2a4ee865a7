// Sampler: picks the next token from logits, and optionally reports log-probabilities.
//
// The logits pass through these steps, in this order (vLLM's order):
//   1. logit_bias         - each (token, bias) pair is added to that token's logit.
//   2. penalties          - over the tokens seen so far: repetition_penalty (HF/CTRL style:
//                           a positive logit is divided by it, a negative one multiplied) for
//                           every token of the prompt or the output; presence_penalty is
//                           subtracted once from every token of the output, frequency_penalty
//                           once per occurrence in the output (OpenAI's definitions).
//   3. temperature <= 0   - greedy: argmax, the lowest id winning ties (as llama.cpp).
//      otherwise          - softmax(logits / temperature); then only the tokens whose
//                           probability is at least min_p x the largest (0 = off); then the
//                           top_k most likely (0 = all); then the smallest set whose mass
//                           reaches top_p (1 = all); then one draw from a generator seeded
//                           with (seed, step).
// Step i's draw depends only on the seed and i, not on earlier draws, so a decode node that
// continues a sequence whose first token was sampled on the prefill node (Sampler(params, 1),
// then Accept(token 1)) draws exactly what a single process would.
//
// Log-probabilities (params.logprobs >= 0) are those of the model's own distribution: the
// log-softmax of the raw logits, before bias, penalties and temperature (vLLM's default,
// "raw_logprobs"), of the chosen token and of the `logprobs` most likely tokens.
//
// Not thread-safe (counts steps and keeps the history the penalties read).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace smartgen::model {

// Most top log-probabilities one token may report (OpenAI's limit for chat).
inline constexpr int kMaxTopLogprobs = 20;

struct SamplingParams {
  float temperature = 0.0f;
  int top_k = 0;
  float top_p = 1.0f;
  std::uint64_t seed = 0;
  // Fields below: after `seed`, so that {temperature, top_k, top_p, seed} still initialises.
  float min_p = 0.0f;               // [0, 1]
  float presence_penalty = 0.0f;    // OpenAI: [-2, 2]
  float frequency_penalty = 0.0f;   // OpenAI: [-2, 2]
  float repetition_penalty = 1.0f;  // > 0; 1 = off
  std::vector<std::pair<std::int32_t, float>> logit_bias = {};  // (token id, added to logit)
  int logprobs = -1;  // -1: none; 0..kMaxTopLogprobs: the chosen token's and this many top ones

  // True when any of steps 1 and 2 changes the logits.
  bool AdjustsLogits() const {
    return !logit_bias.empty() || presence_penalty != 0.0f || frequency_penalty != 0.0f ||
           repetition_penalty != 1.0f;
  }
};

// One generated token's log-probabilities (natural log).
struct TokenLogprobs {
  float logprob = 0.0f;                             // of the chosen token
  std::vector<std::pair<std::int32_t, float>> top;  // most likely first, lowest id on ties
};

// log-softmax of `logits` at `chosen`, and the `top_n` most likely tokens (clamped to the
// vocabulary). Computed in double precision.
TokenLogprobs ComputeLogprobs(std::span<const float> logits, std::int32_t chosen, int top_n);

class Sampler {
 public:
  // `first_step` is the index of the first token this sampler draws (0 for a fresh sequence).
  explicit Sampler(SamplingParams params, std::int64_t first_step = 0);

  // The prompt's tokens, which repetition_penalty also penalises. Call before the first Sample.
  void SetPrompt(std::span<const std::int32_t> prompt);
  // A token of this sequence's output that another sampler drew (e.g. token 1 on the prefill
  // node): the penalties see it. Does not advance the step.
  void Accept(std::int32_t token);

  // Picks token `step()`, records it for the penalties and advances the step. With
  // params().logprobs >= 0 and `logprobs` given, fills it.
  std::int32_t Sample(std::span<const float> logits, TokenLogprobs* logprobs = nullptr);

  // The distribution step 3 draws from (after bias, penalties, temperature, min_p, top_k and
  // top_p): (token, probability) pairs, most likely first, probabilities summing to 1. One pair
  // of probability 1 when greedy. Does not advance the step. For tests and analysis.
  std::vector<std::pair<std::int32_t, double>> Distribution(std::span<const float> logits);

  const SamplingParams& params() const { return params_; }
  std::int64_t step() const { return step_; }

 private:
  // Steps 1 and 2 on a copy of `logits` (or `logits` itself when they change nothing).
  std::span<const float> Adjust(std::span<const float> logits);
  // Fills candidates_/probs_ with the kept tokens (step 3, sampling branch); returns their mass.
  double Filter(std::span<const float> logits);

  SamplingParams params_;
  std::int64_t step_;
  std::unordered_set<std::int32_t> prompt_tokens_;
  std::unordered_map<std::int32_t, int> output_counts_;
  std::vector<float> adjusted_;                               // scratch
  std::vector<std::pair<float, std::int32_t>> candidates_;    // scratch
  std::vector<double> probs_;                                 // scratch, unnormalised
};

// Argmax with the lowest id winning ties.
std::int32_t Greedy(std::span<const float> logits);

}  // namespace smartgen::model
