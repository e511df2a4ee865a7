// Proactive ranking: the budget split, breadth-first order, dense layers, sinks and last
// blocks, ranking by prior x request score; request scores from the last queries.
#include "select/proactive.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "select/block_summary.h"
#include "test_util.h"

namespace smartgen::select {
namespace {

const kv::KvGeometry kGeometry{4, 2, 64, 16, kv::KvDType::kF16};  // 4 KiB blocks

Profile MakeProfile(std::vector<int> dense) {
  Profile p;
  p.model_name = "m";
  p.n_layers = 4;
  p.n_kv_heads = 2;
  p.n_position_buckets = 4;
  p.dense_layers = std::move(dense);
  p.layers.resize(4);
  for (auto& l : p.layers) {
    l.heads.resize(2);
    for (auto& h : l.heads) {
      h.position_freq = {0.0f, 0.0f, 0.0f, 1.0f};  // the profile likes the last quarter
      h.first_freq.assign(kProfileEdgeBlocks, 1.0f);
      h.last_freq.assign(kProfileEdgeBlocks, 1.0f);
    }
  }
  return p;
}

std::vector<LayerPushPlan> PlanAll(const ProactiveBudget& b, const Profile* p,
                                   const std::vector<float>& scores = {}) {
  std::vector<LayerPushPlan> plans;
  for (int l = 0; l < b.grid.n_layers; ++l)
    plans.push_back(PlanLayer(b, l, scores, p, ProactiveOptions()));
  return plans;
}

TEST(Proactive, BudgetCoversSummariesEdgesAndEqualSharesWithinBytes) {
  const std::int64_t n = 1600;  // 100 blocks per (layer, head)
  const std::int64_t full = static_cast<std::int64_t>(kGeometry.bytes_per_token()) * n;
  const std::int64_t budget = ProactiveBudgetForRatio(full, 4.0);
  const ProactiveBudget b = PlanProactiveBudget(kGeometry, n, budget, nullptr, ProactiveOptions());
  EXPECT_EQ(b.grid.n_blocks, 100);
  EXPECT_EQ(b.note, kNoProfileNote);
  EXPECT_LE(b.planned_bytes, budget);
  EXPECT_GT(b.planned_bytes, budget - 4 * 4096);  // at most a block per layer unused
  EXPECT_GT(b.summary_bytes, 0);
  for (int l = 1; l < 4; ++l) EXPECT_NEAR(b.layer_blocks[l], b.layer_blocks[0], 1);
  const auto plans = PlanAll(b, nullptr);
  std::int64_t bytes = b.summary_bytes;
  for (int l = 0; l < 4; ++l) {
    EXPECT_EQ(std::ssize(plans[l].push), b.layer_blocks[l]);
    EXPECT_EQ(std::ssize(plans[l].push) + std::ssize(plans[l].rest), 200);
    bytes += std::ssize(plans[l].push) * 4096;
  }
  EXPECT_EQ(bytes, b.planned_bytes);
}

TEST(Proactive, EveryBlockOfALayerIsPushedOrRestExactlyOnce) {
  const ProactiveBudget b =
      PlanProactiveBudget(kGeometry, 1000, 300000, nullptr, ProactiveOptions());
  for (const LayerPushPlan& plan : PlanAll(b, nullptr)) {
    std::set<std::pair<int, int>> seen;
    for (const PushItem& i : plan.push) {
      EXPECT_EQ(i.key.layer, plan.layer);
      EXPECT_TRUE(seen.insert({i.key.kv_head, i.key.block}).second);
    }
    for (const kv::BlockKey& k : plan.rest) EXPECT_TRUE(seen.insert({k.kv_head, k.block}).second);
    EXPECT_EQ(std::ssize(seen), b.grid.per_layer());
  }
}

TEST(Proactive, SinksAndLastBlocksOfEveryLayerLeadBreadthFirst) {
  const ProactiveBudget b =
      PlanProactiveBudget(kGeometry, 1600, 800000, nullptr, ProactiveOptions());
  const auto plans = PlanAll(b, nullptr);
  const std::vector<PushItem> merged = MergeBreadthFirst(plans);
  // Round 0 (1 sink + 2 last per head, 4 layers x 2 heads) comes first, layer by layer.
  ASSERT_GE(merged.size(), 24u);
  for (int i = 0; i < 24; ++i) {
    EXPECT_EQ(merged[i].round, 0);
    EXPECT_EQ(merged[i].key.layer, i / 6);
    const std::int32_t blk = merged[i].key.block;
    EXPECT_TRUE(blk == 0 || blk >= 98) << blk;
  }
  // Rounds never decrease, and each round visits the layers in order.
  for (std::size_t i = 1; i < merged.size(); ++i) {
    ASSERT_GE(merged[i].round, merged[i - 1].round);
    if (merged[i].round == merged[i - 1].round) {
      EXPECT_GE(merged[i].key.layer, merged[i - 1].key.layer);
    }
  }
  // A queue fed layer by layer (as prefill finishes them) gives the same order once all are in.
  ProactiveQueue q(4);
  for (int l = 3; l >= 0; --l) q.Add(plans[l]);
  EXPECT_EQ(q.size(), std::ssize(merged));
  for (const PushItem& want : merged) {
    const auto got = q.Pop();
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->key, want.key);
  }
  EXPECT_FALSE(q.Pop().has_value());
}

TEST(Proactive, DenseLayersGoInFullWhenTheyFitAndAreNotedWhenNot) {
  const Profile p = MakeProfile({0, 1});
  const std::int64_t n = 1600;
  // Room for both dense layers: 2 * 200 blocks + edges + summaries.
  ProactiveBudget b = PlanProactiveBudget(kGeometry, n, 3000000, &p, ProactiveOptions());
  EXPECT_TRUE(b.dense[0] && b.dense[1]);
  EXPECT_FALSE(b.dense[2]);
  EXPECT_EQ(b.layer_blocks[0], 200);
  EXPECT_NE(b.note.find("profile m"), std::string::npos);
  const auto plans = PlanAll(b, &p);
  EXPECT_EQ(plans[0].push.size(), 200u);
  EXPECT_TRUE(plans[0].rest.empty());
  for (const PushItem& i : plans[1].push) EXPECT_EQ(i.round, 0);
  // Room for one only.
  b = PlanProactiveBudget(kGeometry, n, 1300000, &p, ProactiveOptions());
  EXPECT_TRUE(b.dense[0]);
  EXPECT_FALSE(b.dense[1]);
  EXPECT_NE(b.note.find("dense layer 1 does not fit"), std::string::npos);
  // Less than summaries + edges: those still go, nothing else.
  b = PlanProactiveBudget(kGeometry, n, 1000, &p, ProactiveOptions());
  EXPECT_FALSE(b.dense[0]);
  EXPECT_EQ(b.layer_blocks[2], 6);
  EXPECT_NE(b.note.find("budget below"), std::string::npos);
}

TEST(Proactive, RanksByProfilePriorTimesRequestScore) {
  const Profile p = MakeProfile({});
  const std::int64_t n = 1600;
  const ProactiveBudget b = PlanProactiveBudget(kGeometry, n, 420000, &p, ProactiveOptions());
  // Request scores: head 0 likes block 10 (prior floor 0.1) a lot, block 90 (prior 1) a bit.
  std::vector<float> scores(200, 0.001f);
  scores[10] = 0.5f;  // 0.1 * 0.5 = 0.05
  scores[90] = 0.1f;  // 1.0 * 0.1 = 0.1
  const LayerPushPlan plan = PlanLayer(b, 2, scores, &p, ProactiveOptions());
  ASSERT_GT(plan.push.size(), 8u);
  EXPECT_EQ(plan.push[6].key, (kv::BlockKey{2, 0, 90}));
  EXPECT_EQ(plan.push[6].round, 1);
  EXPECT_EQ(plan.push[7].key, (kv::BlockKey{2, 0, 10}));
  // Without a profile the request score alone decides.
  const LayerPushPlan flat = PlanLayer(b, 2, scores, nullptr, ProactiveOptions());
  EXPECT_EQ(flat.push[6].key, (kv::BlockKey{2, 0, 10}));
  // With neither, recency: the latest non-edge blocks first.
  const LayerPushPlan recent = PlanLayer(b, 2, {}, nullptr, ProactiveOptions());
  EXPECT_EQ(recent.push[6].key.block, 97);
}

TEST(Proactive, RequestScoresAreAttentionMassesOfTheLastQueries) {
  const kv::KvGeometry g{1, 1, 8, 16, kv::KvDType::kF32};
  kv::BlockPool pool(g, 64);
  const std::int64_t n = 160;
  std::vector<float> keys(std::size_t(n) * 8, 0.0f), values(keys.size(), 0.0f);
  for (int t = 0; t < 16; ++t) keys[(48 + t) * 8 + 2] = 4.0f;  // block 3 matches channel 2
  auto seq = testing::FillSequence(&pool, n, keys, values);
  model::ModelConfig c;
  c.n_layers = 1;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 8;
  std::vector<float> q(4 * 2 * 8, 0.0f);  // 4 rows, 2 query heads
  for (int r = 0; r < 4; ++r) q[(r * 2 + 1) * 8 + 2] = 3.0f;
  std::vector<float> scores;
  RequestScores(c, *seq, 0, n, q.data(), 4, &scores);
  ASSERT_EQ(scores.size(), 10u);
  EXPECT_NEAR(std::accumulate(scores.begin(), scores.end(), 0.0), 1.0, 1e-5);
  EXPECT_EQ(std::max_element(scores.begin(), scores.end()) - scores.begin(), 3);
  EXPECT_GT(scores[3], 0.4f);  // head 1 almost all on block 3, head 0 uniform
}

}  // namespace
}  // namespace smartgen::select
