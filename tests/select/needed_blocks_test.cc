// Sliding-window-aware transfer in the policies: which blocks a decode needs per layer, and that
// the proactive plan, the speculative order and the on-demand selection send and select a window
// layer's needed blocks whole, and never one before them.
#include "select/needed_blocks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "select/on_demand.h"
#include "select/proactive.h"
#include "select/speculative.h"
#include "test_util.h"

namespace smartgen::select {
namespace {

const kv::KvGeometry kWindowGeometry{4, 2, 64, 16, kv::KvDType::kF16};  // 4 KiB blocks

// Layers 0-2 slide with a 40-token window, layer 3 is global (Gemma 3's pattern, shortened).
model::ModelConfig WindowConfig(int window = 40) {
  model::ModelConfig c;
  c.n_layers = 4;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.sliding_window = window;
  c.layers.resize(4);
  for (int l = 0; l < 3; ++l) {
    c.layers[l].sliding = true;
    c.layers[l].window = window;
  }
  return c;
}

TEST(NeededBlocks, ASlidingLayerNeedsTheBlocksOfTheFirstDecodePositionsWindow) {
  // 1600 tokens: 100 blocks. The query at 1600 attends keys 1561..1600: blocks 97.. (1561/16).
  const NeededBlocks n = PromptNeededBlocks(WindowConfig(), 16, 1600, true);
  EXPECT_EQ(n.grid, (kv::BlockGrid{4, 2, 100}));
  for (int l = 0; l < 3; ++l) {
    EXPECT_TRUE(n.IsWindowLayer(l));
    EXPECT_EQ(n.FirstBlock(l), 97);
    EXPECT_EQ(n.InLayer(l), 2 * 3);
  }
  EXPECT_FALSE(n.IsWindowLayer(3));
  EXPECT_EQ(n.FirstBlock(3), 0);
  EXPECT_EQ(n.Total(), 3 * 6 + 200);
  EXPECT_FALSE(n.Needed({0, 1, 96}));
  EXPECT_TRUE(n.Needed({0, 1, 97}));
  EXPECT_TRUE(n.Needed({3, 0, 0}));
  // Window-awareness off: every block of every layer, no window layer.
  const NeededBlocks all = PromptNeededBlocks(WindowConfig(), 16, 1600, false);
  EXPECT_FALSE(all.AnyWindowLayer());
  EXPECT_EQ(all.Total(), all.grid.total());
  // A window that reaches the first block drops nothing: the layer counts as a global one.
  const NeededBlocks wide = PromptNeededBlocks(WindowConfig(4096), 16, 1600, true);
  EXPECT_FALSE(wide.AnyWindowLayer());
  EXPECT_EQ(wide.Total(), wide.grid.total());
  EXPECT_FALSE(PromptNeededBlocks(WindowConfig(1590), 16, 1600, true).AnyWindowLayer());  // from 11
  EXPECT_TRUE(PromptNeededBlocks(WindowConfig(1570), 16, 1600, true).IsWindowLayer(0));   // from 31
  // A model without sliding layers needs everything either way.
  model::ModelConfig global = WindowConfig();
  global.layers.clear();
  EXPECT_FALSE(PromptNeededBlocks(global, 16, 1600, true).AnyWindowLayer());
}

std::vector<LayerPushPlan> PlanWindowLayers(const ProactiveBudget& b) {
  std::vector<LayerPushPlan> plans;
  for (int l = 0; l < b.grid.n_layers; ++l)
    plans.push_back(PlanLayer(b, l, {}, nullptr, ProactiveOptions()));
  return plans;
}

TEST(NeededBlocks, ProactivePushesWindowsWholeAndRanksOnlyTheGlobalLayers) {
  const std::int64_t n = 1600;
  const NeededBlocks needed = PromptNeededBlocks(WindowConfig(), 16, n, true);
  const std::int64_t full = static_cast<std::int64_t>(kWindowGeometry.bytes_per_token()) * n;
  for (double ratio : {4.0, 1000.0}) {  // 1000: a budget below the windows alone
    const ProactiveBudget b = PlanProactiveBudget(
        kWindowGeometry, n, ProactiveBudgetForRatio(full, ratio), nullptr, ProactiveOptions(), &needed);
    const ProactiveBudget plain = PlanProactiveBudget(
        kWindowGeometry, n, ProactiveBudgetForRatio(full, ratio), nullptr, ProactiveOptions());
    EXPECT_EQ(b.summary_bytes * 4, plain.summary_bytes) << "summaries only for the global layer";
    const auto plans = PlanWindowLayers(b);
    for (int l = 0; l < 3; ++l) {
      EXPECT_EQ(b.layer_blocks[l], needed.InLayer(l)) << "ratio " << ratio;
      EXPECT_TRUE(plans[l].rest.empty()) << "a window layer has nothing left to stream";
      std::set<std::pair<int, int>> pushed;
      for (const PushItem& item : plans[l].push) {
        EXPECT_EQ(item.round, 0) << "required: first, before any ranked block";
        EXPECT_TRUE(needed.Needed(item.key))
            << "block " << item.key.block << " is before the window";
        EXPECT_TRUE(pushed.insert({item.key.kv_head, item.key.block}).second);
      }
      EXPECT_EQ(std::ssize(pushed), needed.InLayer(l));
    }
    // The global layer takes the whole rest of the budget.
    EXPECT_EQ(std::ssize(plans[3].push) + std::ssize(plans[3].rest), needed.InLayer(3));
    if (ratio == 4.0) {
      EXPECT_GT(b.layer_blocks[3], plain.layer_blocks[3])
          << "the windows leave the global layer more";
      EXPECT_LE(b.planned_bytes, b.budget_bytes);
    }
  }
}

TEST(NeededBlocks, SpeculativeOrderStreamsOnlyGlobalLayersAndWithThePushesCoversTheNeed) {
  const std::int64_t n = 1600;
  const NeededBlocks needed = PromptNeededBlocks(WindowConfig(), 16, n, true);
  const ProactiveBudget b =
      PlanProactiveBudget(kWindowGeometry, n, 200000, nullptr, ProactiveOptions(), &needed);
  const auto plans = PlanWindowLayers(b);
  const std::vector<kv::BlockKey> order = SpeculativeOrder(plans);
  ASSERT_FALSE(order.empty());
  std::set<std::int64_t> seen;
  for (const LayerPushPlan& p : plans) {
    for (const PushItem& i : p.push) EXPECT_TRUE(seen.insert(b.grid.Index(i.key)).second);
  }
  for (const kv::BlockKey& k : order) {
    EXPECT_EQ(k.layer, 3) << "a window layer's block in the speculative stream";
    EXPECT_TRUE(seen.insert(b.grid.Index(k)).second) << "duplicate";
  }
  EXPECT_EQ(std::ssize(seen), needed.Total()) << "every needed block once, nothing else";
}

TEST(NeededBlocks, OnDemandSelectsAWindowLayersWindowAndNothingBeforeIt) {
  const model::ModelConfig c = WindowConfig();
  const NeededBlocks needed = PromptNeededBlocks(c, 16, 1600, true);
  OnDemandOptions o;
  o.budget_blocks = 4;
  OnDemandSelector sel(c, 100, o, nullptr);
  sel.SetNeeded(needed);
  EXPECT_TRUE(sel.IsWindowLayer(0));
  EXPECT_FALSE(sel.IsWindowLayer(3));
  // Keys with a strong block early in the prompt: a scored selection would take it.
  std::vector<float> keys = testing::RandomVector(std::size_t(2) * 1600 * 64, 5, 0.01f);
  for (int h = 0; h < 2; ++h) keys[(std::size_t(h) * 1600 + 10 * 16 + 3) * 64 + h] = 5.0f;
  std::vector<float> q(4 * 64, 0.0f);
  q[0 * 64 + 0] = 1.0f;
  q[2 * 64 + 1] = 1.0f;
  const std::vector<std::int32_t> window = {97, 98, 99};
  for (int layer : {0, 1, 2}) {
    const LayerSummaries s = LayerSummaries::BuildFromKeys(layer, 2, 64, 16, 1600, keys);
    LayerSelection out;
    sel.Select(layer, q.data(), s, &out);
    ASSERT_EQ(out.heads.size(), 2u);
    EXPECT_EQ(out.heads[0], window) << "layer " << layer;
    EXPECT_EQ(out.heads[1], window);
    EXPECT_TRUE(out.scores.empty()) << "required, not ranked";
    LayerSelection w;
    sel.SelectWindow(layer, &w);
    EXPECT_EQ(w.heads, out.heads);
  }
  // The prediction for a window layer is its window; the global layer is scored and finds the
  // early block.
  LayerSelection predicted;
  sel.PredictNext(1, &predicted);
  EXPECT_EQ(predicted.heads[0], window);
  const LayerSummaries s3 = LayerSummaries::BuildFromKeys(3, 2, 64, 16, 1600, keys);
  LayerSelection global;
  sel.Select(3, q.data(), s3, &global);
  EXPECT_EQ(std::count(global.heads[0].begin(), global.heads[0].end(), 10), 1);
  EXPECT_EQ(global.heads[0].front(), 0) << "the sink";
}

}  // namespace
}  // namespace smartgen::select
