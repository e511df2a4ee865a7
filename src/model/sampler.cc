#include "model/sampler.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace smartgen::model {
namespace {

// Logit descending, id ascending: the result does not depend on sort stability.
bool Better(const std::pair<float, std::int32_t>& a, const std::pair<float, std::int32_t>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

}  // namespace

std::int32_t Greedy(std::span<const float> logits) {
  std::int32_t best = 0;
  for (std::size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = static_cast<std::int32_t>(i);
  }
  return best;
}

TokenLogprobs ComputeLogprobs(std::span<const float> logits, std::int32_t chosen, int top_n) {
  TokenLogprobs out;
  if (logits.empty()) return out;
  double max_logit = logits[0];
  for (float l : logits) max_logit = std::max<double>(max_logit, l);
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - max_logit);
  const double lse = max_logit + std::log(sum);
  if (chosen >= 0 && static_cast<std::size_t>(chosen) < logits.size()) {
    out.logprob = static_cast<float>(static_cast<double>(logits[chosen]) - lse);
  }
  const std::size_t n = std::min<std::size_t>(std::max(top_n, 0), logits.size());
  if (n == 0) return out;
  std::vector<std::pair<float, std::int32_t>> c(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) c[i] = {logits[i], static_cast<std::int32_t>(i)};
  std::partial_sort(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(n), c.end(), Better);
  out.top.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    out.top.emplace_back(c[i].second, static_cast<float>(static_cast<double>(c[i].first) - lse));
  }
  return out;
}

Sampler::Sampler(SamplingParams params, std::int64_t first_step)
    : params_(std::move(params)), step_(first_step) {}

void Sampler::SetPrompt(std::span<const std::int32_t> prompt) {
  if (params_.repetition_penalty == 1.0f) return;
  prompt_tokens_.insert(prompt.begin(), prompt.end());
}

void Sampler::Accept(std::int32_t token) {
  if (params_.AdjustsLogits()) ++output_counts_[token];
}

std::span<const float> Sampler::Adjust(std::span<const float> logits) {
  if (!params_.AdjustsLogits()) return logits;
  adjusted_.assign(logits.begin(), logits.end());
  const auto in_range = [&](std::int32_t t) {
    return t >= 0 && static_cast<std::size_t>(t) < adjusted_.size();
  };
  for (const auto& [token, bias] : params_.logit_bias) {
    if (in_range(token)) adjusted_[token] += bias;
  }
  const float rep = params_.repetition_penalty;
  const auto repeat = [&](std::int32_t t) {
    float& l = adjusted_[t];
    l = l > 0 ? l / rep : l * rep;
  };
  if (rep != 1.0f) {
    for (std::int32_t t : prompt_tokens_) {
      if (in_range(t)) repeat(t);
    }
  }
  for (const auto& [token, count] : output_counts_) {
    if (!in_range(token)) continue;
    if (rep != 1.0f && !prompt_tokens_.contains(token)) repeat(token);
    adjusted_[token] -= params_.presence_penalty + params_.frequency_penalty * count;
  }
  return adjusted_;
}

double Sampler::Filter(std::span<const float> logits) {
  candidates_.clear();
  candidates_.reserve(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) {
    candidates_.emplace_back(logits[i], static_cast<std::int32_t>(i));
  }
  std::size_t keep = candidates_.size();
  if (params_.top_k > 0 && static_cast<std::size_t>(params_.top_k) < keep) {
    keep = static_cast<std::size_t>(params_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(keep),
                      candidates_.end(), Better);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), Better);
  }
  candidates_.resize(keep);

  const double inv_t = 1.0 / params_.temperature;
  const double max_logit = candidates_[0].first;
  probs_.assign(keep, 0.0);
  double sum = 0.0;
  for (std::size_t i = 0; i < keep; ++i) {
    probs_[i] = std::exp((candidates_[i].first - max_logit) * inv_t);
    sum += probs_[i];
  }
  if (params_.min_p > 0.0f) {
    // probs_[0] is the largest (exp(0) = 1): keep those with p >= min_p x p_max, a prefix.
    std::size_t cut = 1;
    while (cut < keep && probs_[cut] >= params_.min_p) ++cut;
    keep = cut;
    sum = 0.0;
    for (std::size_t i = 0; i < keep; ++i) sum += probs_[i];
  }
  if (params_.top_p < 1.0f) {
    double mass = 0.0;
    std::size_t cut = keep;
    for (std::size_t i = 0; i < keep; ++i) {
      mass += probs_[i] / sum;
      if (mass >= params_.top_p) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
    sum = 0.0;
    for (std::size_t i = 0; i < keep; ++i) sum += probs_[i];
  }
  candidates_.resize(keep);
  probs_.resize(keep);
  return sum;
}

std::vector<std::pair<std::int32_t, double>> Sampler::Distribution(std::span<const float> logits) {
  std::vector<std::pair<std::int32_t, double>> out;
  if (logits.empty()) return out;
  const std::span<const float> l = Adjust(logits);
  if (params_.temperature <= 0.0f || l.size() <= 1) {
    out.emplace_back(Greedy(l), 1.0);
    return out;
  }
  const double sum = Filter(l);
  for (std::size_t i = 0; i < candidates_.size(); ++i) {
    out.emplace_back(candidates_[i].second, probs_[i] / sum);
  }
  return out;
}

std::int32_t Sampler::Sample(std::span<const float> logits, TokenLogprobs* logprobs) {
  const std::int64_t step = step_++;
  const std::span<const float> l = Adjust(logits);
  std::int32_t chosen = 0;
  if (params_.temperature <= 0.0f || l.size() <= 1) {
    chosen = Greedy(l);
  } else {
    const double sum = Filter(l);
    // One draw in [0, sum) from a generator seeded by (seed, step).
    std::mt19937_64 rng(params_.seed * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(step));
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53 * sum;
    double acc = 0.0;
    chosen = candidates_.back().second;
    for (std::size_t i = 0; i < candidates_.size(); ++i) {
      acc += probs_[i];
      if (u < acc) {
        chosen = candidates_[i].second;
        break;
      }
    }
  }
  Accept(chosen);
  if (logprobs && params_.logprobs >= 0) {
    *logprobs = ComputeLogprobs(logits, chosen, params_.logprobs);
  }
  return chosen;
}

}  // namespace smartgen::model
