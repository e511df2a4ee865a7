#include "sim/smartgen_kv.h"

#include <gtest/gtest.h>

#include <cmath>

#include "kv/kv_geometry.h"
#include "select/proactive.h"

namespace smartgen::sim {
namespace {

constexpr std::int64_t kTokens = 4096;  // 256 blocks per (layer, head)

struct Fixture {
  ModelShape shape = *ModelShapeByName("smollm2-135m");
  SmartgenSimOptions options;
  select::ProactiveBudget plan;
  Fixture(double budget_bytes) {
    kv::KvGeometry g;
    g.n_layers = shape.n_layers;
    g.n_kv_heads = shape.n_kv_heads;
    g.head_dim = shape.head_dim;
    plan = select::PlanProactiveBudget(g, kTokens, static_cast<std::int64_t>(budget_bytes), nullptr,
                                       options.proactive);
  }
  SmartgenKv Make() const {
    return SmartgenKv(shape, NeededBlocksFor(shape, 16, kTokens, true), options, plan.layer_blocks);
  }
};

TEST(SmartgenKv, StartsWithTheProactiveSetAndTheNodesBudget) {
  const Fixture f(18.3e6);  // R = 4's proactive set on the testbed
  const SmartgenKv kv = f.Make();
  EXPECT_EQ(kv.budget(), 32);  // max(4, ceil(0.125 x 256)), the on-demand selector's rule
  EXPECT_DOUBLE_EQ(kv.total_blocks(), 30.0 * 3 * 256);
  double pushed = 0;
  for (std::int64_t b : f.plan.layer_blocks) pushed += static_cast<double>(b);
  EXPECT_NEAR(kv.missing(), kv.total_blocks() - pushed, 1e-6);
  EXPECT_FALSE(kv.exact());
}

TEST(SmartgenKv, FirstStepMissesFollowTheLiftModel) {
  const Fixture f(18.3e6);
  SmartgenKv kv = f.Make();
  const SelectionStats stats = *SelectionStatsByName("random-weights");
  const double edges = 3 * 3, candidates = 3 * 256 - edges;
  const double p = (static_cast<double>(f.plan.layer_blocks[0]) - edges) / candidates;
  const LayerDemand d = kv.Select(0, 1, stats);
  EXPECT_DOUBLE_EQ(d.selected, edges + 3 * 32);
  EXPECT_NEAR(d.absent, 3 * 32 * (1 - stats.FirstStepPresent(p)), 1e-9);
  EXPECT_NEAR(d.to_fetch, d.absent, 1e-12);
  // Across layers the step-1 on-demand ratio is the recorded 0.548 it was fitted to (+-0.03).
  double absent = d.absent, selected = d.selected;
  for (int l = 1; l < 30; ++l) {
    const LayerDemand dl = kv.Select(l, 1, stats);
    absent += dl.absent;
    selected += dl.selected;
  }
  EXPECT_NEAR(absent / selected, 0.548, 0.03);
}

TEST(SmartgenKv, FetchesAndTheStreamConserveBlocksUntilExact) {
  const Fixture f(18.3e6);
  SmartgenKv kv = f.Make();
  const SelectionStats stats = *SelectionStatsByName("random-weights");
  const double before = kv.missing();
  const LayerDemand d = kv.Select(3, 1, stats);
  kv.Requested(3, d.to_fetch);
  EXPECT_NEAR(kv.in_flight(3), d.to_fetch, 1e-12);
  EXPECT_NEAR(kv.missing(), before, 1e-6);  // requested is still missing
  kv.Landed(3, d.to_fetch);
  EXPECT_NEAR(kv.missing(), before - d.to_fetch, 1e-6);
  // A speculative batch on the wire; a later step fetches some of it again (a duplicate).
  const double taken = kv.TakeSpeculative(1000);
  EXPECT_DOUBLE_EQ(taken, 1000);
  const LayerDemand d2 = kv.Select(3, 2, stats);
  EXPECT_GT(kv.duplicate_blocks(), 0);
  kv.Requested(3, d2.to_fetch);
  kv.Landed(3, d2.to_fetch);
  kv.SpeculativeLanded();
  // The rest in one batch: then nothing is missing.
  kv.TakeSpeculative(kv.speculative_remaining());
  kv.SpeculativeLanded();
  EXPECT_NEAR(kv.missing(), 0, 1e-6);
  EXPECT_TRUE(kv.exact());
}

TEST(SmartgenKv, AWrongPredictionFetchesNeverSelectedBlocksThatThenArePresent) {
  const Fixture f(18.3e6);
  SmartgenKv kv = f.Make();
  const double before = kv.missing(), stream = kv.speculative_remaining(), present = kv.present(5);
  EXPECT_DOUBLE_EQ(kv.layer_blocks(5), 3.0 * 256);
  const double took = kv.Mispredicted(5, 40);
  EXPECT_DOUBLE_EQ(took, 40);
  EXPECT_NEAR(kv.speculative_remaining(), stream - 40, 1e-9);  // the stream skips them
  EXPECT_NEAR(kv.missing(), before, 1e-9);                     // still on the wire
  kv.MispredictedLanded(5, 40);
  EXPECT_NEAR(kv.missing(), before - 40, 1e-9);
  EXPECT_NEAR(kv.present(5), present + 40, 1e-9);
  // Never more than the layer lacks.
  EXPECT_LE(kv.Mispredicted(5, 1e9), kv.layer_blocks(5) - kv.present(5) + 1e-9);
}

TEST(SmartgenKv, DeferredBlocksAreMissingButNotWaitedFor) {
  const Fixture f(18.3e6);
  SmartgenKv kv = f.Make();
  const SelectionStats stats = *SelectionStatsByName("random-weights");
  kv.Select(3, 1, stats);
  const double wanted = kv.wanted(3), present = kv.present(3), missing = kv.missing();
  ASSERT_GT(wanted, 0.5);
  kv.Deferred(3, 0.4);
  EXPECT_NEAR(kv.wanted(3), wanted - 0.4, 1e-12);
  EXPECT_DOUBLE_EQ(kv.in_flight(3), 0.0);  // the layer does not wait for them
  EXPECT_NEAR(kv.present(3), present, 1e-12);
  EXPECT_NEAR(kv.missing(), missing, 1e-12);
  kv.DeferredLanded(3, 0.4);
  EXPECT_NEAR(kv.present(3), present + 0.4, 1e-12);
  EXPECT_NEAR(kv.missing(), missing - 0.4, 1e-12);
  kv.Deferred(3, 1e9);  // never more than is wanted
  EXPECT_DOUBLE_EQ(kv.wanted(3), 0.0);
}

TEST(SmartgenKv, WindowLayersArePushedWholeAndNeverSelective) {
  SmartgenSimOptions options;
  const ModelShape gemma = *ModelShapeByName("gemma-3-12b");
  std::vector<std::int64_t> blocks(48, 8 * 3);  // edges only (the window layers' do not matter)
  const SmartgenKv kv(gemma, NeededBlocksFor(gemma, 16, 8192, true), options, blocks);
  EXPECT_EQ(kv.n_layers(), 8);  // the 8 global layers
  EXPECT_FALSE(kv.selective(0));
  EXPECT_TRUE(kv.selective(5));
  EXPECT_DOUBLE_EQ(kv.total_blocks(), 8.0 * 8 * 512);
  // Ignoring the windows, every layer selects.
  const SmartgenKv all(gemma, NeededBlocksFor(gemma, 16, 8192, false), options, blocks);
  EXPECT_EQ(all.n_layers(), 48);
  EXPECT_TRUE(all.selective(0));
  // A window that covers the prompt leaves nothing out: the layer selects like a global one
  // (select/needed_blocks.h).
  const SmartgenKv short_prompt(gemma, NeededBlocksFor(gemma, 16, 512, true), options, blocks);
  EXPECT_EQ(short_prompt.n_layers(), 48);
}

TEST(SelectionStats, ChurnDecaysFromStepTwo) {
  const SelectionStats s = *SelectionStatsByName("random-weights-2026-11-30");
  EXPECT_DOUBLE_EQ(s.Churn(1), 1.0);
  EXPECT_DOUBLE_EQ(s.Churn(2), s.churn_step2);
  EXPECT_LT(s.Churn(60), 0.25 * s.Churn(2));
  EXPECT_GT(s.FirstStepPresent(0.15), 0.15);  // lift: better than a random set
  EXPECT_DOUBLE_EQ(s.FirstStepPresent(1.0), 1.0);
  EXPECT_FALSE(SelectionStatsByName("nope").ok());
}

TEST(SelectionStats, ReplaysARecordsPerStepChurnThenItsMean) {
  const SelectionStats base = *SelectionStatsByName("random-weights");
  const auto rec = nlohmann::json::parse(
      R"({"selection_churn_per_step": [1.0, 0.3, 0.2], "selection_churn": 0.05, "prediction_hit_rate": 0.7})");
  auto s = SelectionStatsFromRecord(rec, base);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_DOUBLE_EQ(s->Churn(1), 1.0);
  EXPECT_DOUBLE_EQ(s->Churn(2), 0.3);
  EXPECT_DOUBLE_EQ(s->Churn(3), 0.2);
  EXPECT_DOUBLE_EQ(s->Churn(4), 0.05);   // past the recorded steps: the recorded mean
  EXPECT_DOUBLE_EQ(s->Churn(50), 0.05);
  EXPECT_DOUBLE_EQ(s->predictor_hit, 0.7);
  EXPECT_DOUBLE_EQ(s->first_step_lift, base.first_step_lift);
  EXPECT_EQ(SelectionStatsFromRecord(nlohmann::json::object(), base).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace smartgen::sim
