// Speculative order: layers interleaved in importance order, every block exactly once, none
// of the already sent or requested ones; pacing.
#include "select/speculative.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace smartgen::select {
namespace {

const kv::KvGeometry kSpeculativeGeometry{3, 2, 64, 16, kv::KvDType::kF16};

std::vector<LayerPushPlan> Plans(std::int64_t budget) {
  const ProactiveBudget b =
      PlanProactiveBudget(kSpeculativeGeometry, 800, budget, nullptr, ProactiveOptions());
  std::vector<LayerPushPlan> plans;
  for (int l = 0; l < 3; ++l) plans.push_back(PlanLayer(b, l, {}, nullptr, ProactiveOptions()));
  return plans;
}

TEST(Speculative, OrderInterleavesLayersAndExcludesPushedBlocks) {
  const auto plans = Plans(200000);
  const std::vector<kv::BlockKey> order = SpeculativeOrder(plans);
  std::size_t pushed = 0;
  for (const auto& p : plans) pushed += p.push.size();
  EXPECT_EQ(order.size() + pushed, 3u * 2 * 50);
  EXPECT_EQ(order[0].layer, 0);
  EXPECT_EQ(order[1].layer, 1);
  EXPECT_EQ(order[2].layer, 2);
  EXPECT_EQ(order[0], plans[0].rest[0]);
  EXPECT_EQ(order[3], plans[0].rest[1]);
  std::set<std::int64_t> seen;
  const kv::BlockGrid grid{3, 2, 50};
  for (const auto& p : plans) {
    for (const auto& i : p.push) seen.insert(grid.Index(i.key));
  }
  for (const kv::BlockKey& k : order) EXPECT_TRUE(seen.insert(grid.Index(k)).second) << "duplicate";
  EXPECT_EQ(std::ssize(seen), grid.total());
}

TEST(Speculative, StreamCoversEveryBlockOnceAndSkipsSentOrRequested) {
  const auto plans = Plans(100000);
  const kv::BlockGrid grid{3, 2, 50};
  kv::BlockSet done(grid);  // pushed, requested on demand, or streamed
  for (const auto& p : plans) {
    for (const auto& i : p.push) done.Insert(i.key);
  }
  SpeculativeStream stream(SpeculativeOrder(plans));
  std::mt19937 rng(3);
  std::int64_t streamed = 0;
  std::vector<kv::BlockKey> batch;
  while (!stream.done()) {
    // The decode node requests a few random blocks on demand between batches.
    for (int i = 0; i < 3; ++i) {
      done.Insert(
          {static_cast<int>(rng() % 3), static_cast<int>(rng() % 2), static_cast<int>(rng() % 50)});
    }
    batch.clear();
    stream.Next(7, done, &batch);
    for (const kv::BlockKey& k : batch) {
      EXPECT_TRUE(done.Insert(k)) << "block sent twice";
      ++streamed;
    }
  }
  EXPECT_GT(streamed, 0);
  EXPECT_EQ(done.size(), grid.total());
  batch.clear();
  EXPECT_EQ(stream.Next(10, done, &batch), 0);
}

TEST(Speculative, PacingIsATenthOfTheRemainderInWholeBlocks) {
  const SpeculativePacing p;
  EXPECT_EQ(SpeculativeBytesForStep(p, 1000 * 4096, 4096), 100 * 4096);
  EXPECT_EQ(SpeculativeBytesForStep(p, 1001 * 4096, 4096), 101 * 4096);  // rounded up
  EXPECT_EQ(SpeculativeBytesForStep(p, 5 * 4096, 4096), 4096);           // at least a block
  EXPECT_EQ(SpeculativeBytesForStep(p, 100, 4096), 100);                 // capped at the rest
  EXPECT_EQ(SpeculativeBytesForStep(p, 0, 4096), 0);
  SpeculativePacing fast{0.5, 0};
  EXPECT_EQ(SpeculativeBytesForStep(fast, 1000 * 4096, 4096), 500 * 4096);
  // Draining at a tenth per step leaves under 1 % after 44 steps.
  std::int64_t left = 10000 * 4096;
  int steps = 0;
  while (left > 100 * 4096) {
    left -= SpeculativeBytesForStep(p, left, 4096);
    ++steps;
  }
  EXPECT_LE(steps, 44);
}

}  // namespace
}  // namespace smartgen::select
