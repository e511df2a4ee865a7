// The sampler's logit processing (logit_bias, penalties, min_p with top_k / top_p) and its
// log-probabilities, each checked against a plain scalar reference written out below.
#include "model/sampler.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

namespace smartgen::model {
namespace {

std::vector<float> Logits(int n, float phase = 0.7f) {
  std::vector<float> l(n);
  for (int i = 0; i < n; ++i) l[i] = std::sin(i * phase) * 3.0f + 0.01f * i;
  return l;
}

// The reference: every step written out over the whole vocabulary, in double precision.
std::vector<std::pair<std::int32_t, double>> Reference(const std::vector<float>& raw,
                                                       const SamplingParams& p,
                                                       const std::vector<std::int32_t>& prompt,
                                                       const std::vector<std::int32_t>& output) {
  const int n = static_cast<int>(raw.size());
  std::vector<double> l(raw.begin(), raw.end());
  for (const auto& [t, b] : p.logit_bias) l[t] += b;
  for (int t = 0; t < n; ++t) {
    const bool in_prompt = std::find(prompt.begin(), prompt.end(), t) != prompt.end();
    const int count = static_cast<int>(std::count(output.begin(), output.end(), t));
    if ((in_prompt || count > 0) && p.repetition_penalty != 1.0f) {
      // The float arithmetic the sampler does, so that ties and rounding agree exactly.
      float f = static_cast<float>(l[t]);
      f = f > 0 ? f / p.repetition_penalty : f * p.repetition_penalty;
      l[t] = f;
    }
    if (count > 0) {
      l[t] = static_cast<float>(static_cast<float>(l[t]) -
                                (p.presence_penalty + p.frequency_penalty * count));
    }
  }
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return static_cast<float>(l[a]) > static_cast<float>(l[b]) ||
           (static_cast<float>(l[a]) == static_cast<float>(l[b]) && a < b);
  });
  if (p.temperature <= 0) return {{order[0], 1.0}};
  std::vector<double> prob(n);
  const double top = static_cast<float>(l[order[0]]);
  for (int i = 0; i < n; ++i) {
    prob[i] = std::exp((static_cast<float>(l[order[i]]) - top) / p.temperature);
  }
  int keep = n;
  if (p.top_k > 0) keep = std::min(keep, p.top_k);
  if (p.min_p > 0) {
    int cut = 1;
    while (cut < keep && prob[cut] >= p.min_p * prob[0]) ++cut;
    keep = cut;
  }
  double sum = std::accumulate(prob.begin(), prob.begin() + keep, 0.0);
  if (p.top_p < 1) {
    double mass = 0;
    for (int i = 0; i < keep; ++i) {
      mass += prob[i] / sum;
      if (mass >= p.top_p) {
        keep = i + 1;
        break;
      }
    }
    sum = std::accumulate(prob.begin(), prob.begin() + keep, 0.0);
  }
  std::vector<std::pair<std::int32_t, double>> out;
  for (int i = 0; i < keep; ++i) out.emplace_back(order[i], prob[i] / sum);
  return out;
}

void ExpectSameDistribution(const std::vector<std::pair<std::int32_t, double>>& got,
                            const std::vector<std::pair<std::int32_t, double>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, want[i].first) << "rank " << i;
    EXPECT_NEAR(got[i].second, want[i].second, 1e-9) << "rank " << i;
  }
}

// Samples `steps` tokens and checks the distribution of every step against the reference fed
// with the same history.
void CheckAgainstReference(const SamplingParams& p, const std::vector<std::int32_t>& prompt,
                           int steps = 12) {
  const std::vector<float> logits = Logits(64);
  Sampler s(p);
  s.SetPrompt(prompt);
  std::vector<std::int32_t> output;
  for (int i = 0; i < steps; ++i) {
    ExpectSameDistribution(s.Distribution(logits), Reference(logits, p, prompt, output));
    output.push_back(s.Sample(logits));
  }
}

TEST(SamplerPenalties, PresenceAndFrequencyMatchTheReference) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.seed = 3;
  p.presence_penalty = 1.5f;
  CheckAgainstReference(p, {});
  p.presence_penalty = 0;
  p.frequency_penalty = 0.7f;
  CheckAgainstReference(p, {});
  p.presence_penalty = -0.5f;  // negative values encourage repeats
  CheckAgainstReference(p, {1, 2, 3});
}

TEST(SamplerPenalties, RepetitionCoversPromptAndOutput) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 11;
  p.repetition_penalty = 1.3f;
  CheckAgainstReference(p, {5, 9, 9, 40, 63});
  p.repetition_penalty = 0.8f;  // < 1 rewards repeats
  CheckAgainstReference(p, {5, 9});
}

TEST(SamplerPenalties, GreedyFollowsThePenalisedLogits) {
  // Without penalties greedy repeats the argmax; with a large presence penalty it never
  // repeats a token.
  SamplingParams p;
  p.presence_penalty = 2.0f;
  const std::vector<float> logits = Logits(64);
  Sampler s(p);
  std::vector<std::int32_t> out;
  for (int i = 0; i < 6; ++i) {
    ExpectSameDistribution(s.Distribution(logits), Reference(logits, p, {}, out));
    out.push_back(s.Sample(logits));
  }
  std::vector<std::int32_t> unique = out;
  std::sort(unique.begin(), unique.end());
  EXPECT_EQ(std::unique(unique.begin(), unique.end()), unique.end());
  EXPECT_EQ(out[0], Greedy(logits));
}

TEST(SamplerPenalties, AcceptedTokensArePenalisedLikeSampledOnes) {
  // A decode node continues after token 1 from the prefill node: Accept(token 1) then step 1.
  SamplingParams p;
  p.temperature = 0.9f;
  p.seed = 5;
  p.frequency_penalty = 1.0f;
  p.repetition_penalty = 1.2f;
  const std::vector<float> logits = Logits(64);
  const std::vector<std::int32_t> prompt = {1, 2};
  Sampler whole(p);
  whole.SetPrompt(prompt);
  std::vector<std::int32_t> a;
  for (int i = 0; i < 8; ++i) a.push_back(whole.Sample(logits));
  Sampler resumed(p, 1);
  resumed.SetPrompt(prompt);
  resumed.Accept(a[0]);
  for (int i = 1; i < 8; ++i) EXPECT_EQ(resumed.Sample(logits), a[i]) << i;
}

TEST(SamplerLogitBias, AddsToTheLogitsFirst) {
  SamplingParams p;
  const std::vector<float> logits = Logits(64);
  const std::int32_t unlikely = static_cast<std::int32_t>(
      std::min_element(logits.begin(), logits.end()) - logits.begin());
  p.logit_bias = {{unlikely, 100.0f}, {Greedy(logits), -100.0f}, {1000, 5.0f}};  // 1000: ignored
  Sampler greedy(p);
  EXPECT_EQ(greedy.Sample(logits), unlikely);
  p.temperature = 1.0f;
  p.logit_bias = {{3, 2.5f}, {17, -1.0f}};
  CheckAgainstReference(p, {});
}

TEST(SamplerMinP, KeepsTokensWithinTheRatioOfTheBest) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 2;
  for (float min_p : {0.05f, 0.3f, 0.9f, 1.0f}) {
    p.min_p = min_p;
    CheckAgainstReference(p, {}, 3);
    Sampler s(p);
    const auto d = s.Distribution(Logits(64));
    const double best = d.front().second;
    for (const auto& [t, prob] : d) EXPECT_GE(prob, min_p * best * (1 - 1e-12)) << t;
  }
  // With top_k and top_p as well.
  p.min_p = 0.02f;
  p.top_k = 10;
  p.top_p = 0.8f;
  CheckAgainstReference(p, {}, 3);
}

TEST(SamplerMinP, NoAdjustmentDrawsWhatTheUnprocessedSamplerDraws) {
  // Neutral settings (min_p 0, penalties 0, repetition 1, no bias) draw the same tokens as
  // before these steps existed: the draw is unchanged.
  SamplingParams plain{1.0f, 0, 0.95f, 42};
  SamplingParams neutral = plain;
  neutral.min_p = 0;
  neutral.repetition_penalty = 1.0f;
  const std::vector<float> logits = Logits(64);
  Sampler a(plain), b(neutral);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(a.Sample(logits), b.Sample(logits));
}

TEST(SamplerLogprobs, LogSoftmaxOfChosenAndTop) {
  const std::vector<float> logits = Logits(64, 1.3f);
  double max_l = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float l : logits) sum += std::exp(l - max_l);
  const double lse = max_l + std::log(sum);
  const TokenLogprobs r = ComputeLogprobs(logits, 7, 5);
  EXPECT_NEAR(r.logprob, logits[7] - lse, 1e-5);
  ASSERT_EQ(r.top.size(), 5u);
  std::vector<int> order(64);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  double prob_sum = 0;
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(r.top[i].first, order[i]);
    EXPECT_NEAR(r.top[i].second, logits[order[i]] - lse, 1e-5);
    prob_sum += std::exp(r.top[i].second);
  }
  EXPECT_LT(prob_sum, 1.0 + 1e-6);
  EXPECT_EQ(ComputeLogprobs(logits, 7, 0).top.size(), 0u);
  EXPECT_EQ(ComputeLogprobs(logits, 7, 1000).top.size(), 64u);  // clamped to the vocabulary
}

TEST(SamplerLogprobs, SampleReportsTheRawDistribution) {
  // Logprobs are those of the raw logits, whatever the temperature or penalties.
  SamplingParams p;
  p.temperature = 0.5f;
  p.seed = 9;
  p.presence_penalty = 1.0f;
  p.logprobs = 3;
  const std::vector<float> logits = Logits(64);
  Sampler s(p);
  for (int i = 0; i < 5; ++i) {
    TokenLogprobs lp;
    const std::int32_t t = s.Sample(logits, &lp);
    const TokenLogprobs want = ComputeLogprobs(logits, t, 3);
    EXPECT_FLOAT_EQ(lp.logprob, want.logprob);
    ASSERT_EQ(lp.top.size(), 3u);
    EXPECT_EQ(lp.top, want.top);
  }
  // logprobs = -1: nothing is filled.
  Sampler off(SamplingParams{});
  TokenLogprobs untouched;
  untouched.logprob = 123.0f;
  off.Sample(logits, &untouched);
  EXPECT_EQ(untouched.logprob, 123.0f);
}

}  // namespace
}  // namespace smartgen::model
