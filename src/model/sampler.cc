#include "model/sampler.h"

#include <algorithm>
#include <cmath>

namespace smartgen::model {

std::int32_t Greedy(std::span<const float> logits) {
  std::int32_t best = 0;
  for (std::size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = static_cast<std::int32_t>(i);
  }
  return best;
}

Sampler::Sampler(SamplingParams params, std::int64_t first_step)
    : params_(params), step_(first_step) {}

std::int32_t Sampler::Sample(std::span<const float> logits) {
  const std::int64_t step = step_++;
  if (params_.temperature <= 0.0f || logits.size() <= 1) return Greedy(logits);
  candidates_.clear();
  candidates_.reserve(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) {
    candidates_.emplace_back(logits[i], static_cast<std::int32_t>(i));
  }
  // Order by logit descending, id ascending, so the result does not depend on sort stability.
  auto better = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  std::size_t keep = candidates_.size();
  if (params_.top_k > 0 && static_cast<std::size_t>(params_.top_k) < keep) {
    keep = static_cast<std::size_t>(params_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + keep, candidates_.end(), better);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), better);
  }
  candidates_.resize(keep);

  const double inv_t = 1.0 / params_.temperature;
  const double max_logit = candidates_[0].first;
  std::vector<double> probs(keep);
  double sum = 0.0;
  for (std::size_t i = 0; i < keep; ++i) {
    probs[i] = std::exp((candidates_[i].first - max_logit) * inv_t);
    sum += probs[i];
  }
  if (params_.top_p < 1.0f) {
    double mass = 0.0;
    std::size_t cut = keep;
    for (std::size_t i = 0; i < keep; ++i) {
      mass += probs[i] / sum;
      if (mass >= params_.top_p) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
    sum = 0.0;
    for (std::size_t i = 0; i < keep; ++i) sum += probs[i];
  }
  // One draw in [0, sum) from a generator seeded by (seed, step).
  std::mt19937_64 rng(params_.seed * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(step));
  const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53 * sum;
  double acc = 0.0;
  for (std::size_t i = 0; i < keep; ++i) {
    acc += probs[i];
    if (u < acc) return candidates_[i].second;
  }
  return candidates_[keep - 1].second;
}

}  // namespace smartgen::model
