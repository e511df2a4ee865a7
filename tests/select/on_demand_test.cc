// On-demand selection: sinks, local window, top blocks by summary score per KV head,
// aggregated over the group; budgets; dense layers; the next-layer predictor.
#include "select/on_demand.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "test_util.h"

namespace smartgen::select {
namespace {

model::ModelConfig Config(int n_layers, int n_heads, int n_kv_heads, int head_dim) {
  model::ModelConfig c;
  c.n_layers = n_layers;
  c.n_heads = n_heads;
  c.n_kv_heads = n_kv_heads;
  c.head_dim = head_dim;
  return c;
}

// Keys: small noise everywhere, and for KV head h a strong key along channel h in block
// hot[h] (so a query along channel h scores that block highest).
LayerSummaries Summaries(int n_heads, int d, std::int64_t n_tokens, const std::vector<int>& hot) {
  std::vector<float> keys = testing::RandomVector(std::size_t(n_heads) * n_tokens * d, 3, 0.01f);
  for (int h = 0; h < n_heads; ++h)
    keys[(std::size_t(h) * n_tokens + hot[h] * 16 + 5) * d + h] = 5.0f;
  return LayerSummaries::BuildFromKeys(0, n_heads, d, 16, n_tokens, keys);
}

TEST(OnDemand, SelectsSinksLocalWindowAndTheTopScoredBlockPerHead) {
  const model::ModelConfig c = Config(1, 4, 2, 8);         // 2 query heads per KV head
  const LayerSummaries s = Summaries(2, 8, 320, {7, 12});  // 20 blocks
  OnDemandOptions o;
  o.budget_blocks = 1;
  OnDemandSelector sel(c, 20, o, nullptr);
  EXPECT_EQ(sel.budget(), 1);
  EXPECT_EQ(sel.policy_note(), kNoProfileNote);
  // KV head 0's second query head and KV head 1's first query head point at the hot channel.
  std::vector<float> q(4 * 8, 0.0f);
  q[1 * 8 + 0] = 1.0f;
  q[2 * 8 + 1] = 1.0f;
  LayerSelection out;
  sel.Select(0, q.data(), s, &out);
  ASSERT_EQ(out.heads.size(), 2u);
  EXPECT_EQ(out.heads[0], (std::vector<std::int32_t>{0, 7, 18, 19}));
  EXPECT_EQ(out.heads[1], (std::vector<std::int32_t>{0, 12, 18, 19}));
}

TEST(OnDemand, HysteresisKeepsTheLastChoiceUntilAnotherBlockClearlyOutscoresIt) {
  const model::ModelConfig c = Config(1, 1, 1, 8);
  std::vector<float> keys = testing::RandomVector(std::size_t(320) * 8, 5, 0.01f);  // 20 blocks
  keys[(7 * 16 + 3) * 8 + 0] = 5.0f;   // block 7: strong on channel 0
  keys[(9 * 16 + 3) * 8 + 0] = 4.9f;   // block 9: nearly as strong, and a little on channel 1
  keys[(9 * 16 + 3) * 8 + 1] = 0.2f;
  const LayerSummaries s = LayerSummaries::BuildFromKeys(0, 1, 8, 16, 320, keys);
  auto chosen = [](const LayerSelection& out) { return out.heads[0][1]; };  // after the sink
  for (float hysteresis : {0.0f, 0.3f}) {
    OnDemandOptions o;
    o.budget_blocks = 1;
    o.hysteresis = hysteresis;
    OnDemandSelector sel(c, 20, o, nullptr);
    LayerSelection out;
    std::vector<float> q(8, 0.0f);
    q[0] = 1.0f;
    sel.Select(0, q.data(), s, &out);
    ASSERT_EQ(chosen(out), 7);
    q[1] = 1.0f;  // block 9 now scores a little higher (about 0.1 / sqrt(8) logits)
    sel.Select(0, q.data(), s, &out);
    EXPECT_EQ(chosen(out), hysteresis > 0 ? 7 : 9) << "hysteresis " << hysteresis;
    q[1] = 30.0f;  // now by about 2 logits: the choice moves even with hysteresis
    sel.Select(0, q.data(), s, &out);
    EXPECT_EQ(chosen(out), 9) << "hysteresis " << hysteresis;
    EXPECT_GT(sel.churn(), 0.0);
    // The stored scores are the true bounds, without the margin.
    EXPECT_GT(out.scores[0][1], out.scores[0][0]);
  }
}

TEST(OnDemand, BudgetFromFractionWithFloor) {
  const model::ModelConfig c = Config(1, 2, 1, 8);
  OnDemandOptions o;
  EXPECT_EQ(OnDemandSelector(c, 256, o, nullptr).budget(), 32);  // 1/8
  EXPECT_EQ(OnDemandSelector(c, 10, o, nullptr).budget(), 4);    // floor
  o.budget_blocks = 7;
  EXPECT_EQ(OnDemandSelector(c, 256, o, nullptr).budget(), 7);
}

TEST(OnDemand, SmallPromptsSelectEverything) {
  const model::ModelConfig c = Config(1, 2, 1, 8);
  const LayerSummaries s = Summaries(1, 8, 96, {2});  // 6 blocks: 1 sink + 2 local + 3 <= 4
  OnDemandSelector sel(c, 6, OnDemandOptions(), nullptr);
  std::vector<float> q(2 * 8, 0.5f);
  LayerSelection out;
  sel.Select(0, q.data(), s, &out);
  EXPECT_EQ(out.heads[0], (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5}));
}

TEST(OnDemand, ProfileDenseLayersSelectEveryBlockAndPredictionFollows) {
  const model::ModelConfig c = Config(3, 2, 1, 8);
  Profile p;
  p.model_name = "m";
  p.n_layers = 3;
  p.n_kv_heads = 1;
  p.dense_layers = {1};
  p.layers.resize(3);
  for (auto& l : p.layers) l.heads.resize(1);
  OnDemandOptions o;
  o.budget_blocks = 2;
  OnDemandSelector sel(c, 20, o, &p);
  EXPECT_NE(sel.policy_note().find("profile"), std::string::npos);
  EXPECT_TRUE(sel.dense(1));
  EXPECT_FALSE(sel.dense(0));
  const LayerSummaries s = Summaries(1, 8, 320, {9});
  std::vector<float> q(2 * 8, 0.0f);
  q[0] = 1.0f;
  LayerSelection l0, l1, pred;
  sel.Select(0, q.data(), s, &l0);
  EXPECT_EQ(l0.heads[0].size(), 5u);  // sink + 2 scored + 2 local
  EXPECT_TRUE(std::binary_search(l0.heads[0].begin(), l0.heads[0].end(), 9));
  sel.PredictNext(0, &pred);  // layer 1 is dense: everything
  EXPECT_EQ(pred.heads[0].size(), 20u);
  sel.Select(1, q.data(), s, &l1);
  EXPECT_EQ(l1.heads[0].size(), 20u);
  sel.Select(0, q.data(), s, &l0);
  LayerSelection want = l0, diff;
  sel.PredictNext(1, &pred);  // reuse: layer 1's choice
  EXPECT_EQ(pred.heads[0].size(), 20u);
  SelectionDifference(want, pred, &diff);
  EXPECT_TRUE(diff.heads[0].empty());
}

TEST(OnDemand, StreamingHeadsKeepOnlySinksAndLocalWindow) {
  const model::ModelConfig c = Config(1, 2, 2, 8);
  Profile p;
  p.model_name = "m";
  p.n_layers = 1;
  p.n_kv_heads = 2;
  p.layers.resize(1);
  p.layers[0].heads.resize(2);
  p.layers[0].heads[0].streaming_score = 0.95f;
  p.layers[0].heads[1].streaming_score = 0.2f;
  OnDemandOptions o;
  o.budget_blocks = 1;
  o.streaming_threshold = 0.9f;
  OnDemandSelector sel(c, 20, o, &p);
  const LayerSummaries s = Summaries(2, 8, 320, {7, 12});
  std::vector<float> q(2 * 8, 0.0f);
  q[0] = 1.0f;
  q[8 + 1] = 1.0f;
  LayerSelection out;
  sel.Select(0, q.data(), s, &out);
  EXPECT_EQ(out.heads[0], (std::vector<std::int32_t>{0, 18, 19}));
  EXPECT_EQ(out.heads[1], (std::vector<std::int32_t>{0, 12, 18, 19}));
}

TEST(LayerSelection, DifferenceAndUnion) {
  LayerSelection a{{{1, 3, 5, 7}, {2}}, {}}, b{{{3, 4, 7}, {}}, {}}, out;
  SelectionDifference(a, b, &out);
  EXPECT_EQ(out.heads[0], (std::vector<std::int32_t>{1, 5}));
  EXPECT_EQ(out.heads[1], (std::vector<std::int32_t>{2}));
  SelectionUnion(a, b, &out);
  EXPECT_EQ(out.heads[0], (std::vector<std::int32_t>{1, 3, 4, 5, 7}));
  const kv::BlockGrid g{2, 3, 5};
  kv::BlockSet set(g);
  EXPECT_TRUE(set.Insert({1, 2, 4}));
  EXPECT_FALSE(set.Insert({1, 2, 4}));
  EXPECT_EQ(set.size(), 1);
  EXPECT_EQ(g.KeyOf(g.Index({1, 2, 4})), (kv::BlockKey{1, 2, 4}));
}

}  // namespace
}  // namespace smartgen::select
