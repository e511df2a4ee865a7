// Path sizing and the auto rule: the numbers both nodes and the simulator take from the
// measured link rate and step times.
#include "select/path_sizing.h"

#include <gtest/gtest.h>

#include "select/auto_mode.h"

namespace smartgen::select {
namespace {

TEST(PathSizing, ProactiveBudgetFollowsRatioThenRateThenEverything) {
  SmartgenOptions o;
  // 1 MB/s for 2 s at fill 0.85.
  EXPECT_EQ(ProactiveBudgetFor(o, 10'000'000, 1e6, 2.0), 1'700'000);
  EXPECT_EQ(ProactiveBudgetFor(o, 10'000'000, 0, 2.0), 10'000'000);  // no rate yet: all of it
  o.proactive_ratio = 4;
  EXPECT_EQ(ProactiveBudgetFor(o, 10'000'000, 1e6, 2.0), 2'500'000);
}

TEST(PathSizing, FirstStepCarriesTheLinkWithinTheWaitAtLeastOneBlockPerHead) {
  SmartgenOptions o;
  o.first_wait_ms = 15;
  // 4 MB/s x 15 ms = 60 KB = 15 blocks of 4 KiB... floor(14.6).
  EXPECT_EQ(FirstStepBlocks(o, 4e6, 4096, 2, 3), 14);
  EXPECT_EQ(FirstStepBlocks(o, 1e5, 4096, 30, 3), 90);  // slow link: one per (layer, head)
  EXPECT_EQ(FirstStepBlocks(o, 0, 4096, 30, 3), std::numeric_limits<std::int64_t>::max());
}

TEST(PathSizing, FirstStepRanksTheOnDemandBudgetPerHead) {
  SmartgenOptions o;  // budget_fraction 0.125, min 4
  EXPECT_EQ(FirstStepBlocksPerHead(o, 256), 32);
  EXPECT_EQ(FirstStepBlocksPerHead(o, 16), 4);
  EXPECT_EQ(FirstStepBlocksPerHead(o, 3), 3);
  o.first_step_fraction = 0.5;
  EXPECT_EQ(FirstStepBlocksPerHead(o, 256), 128);
}

TEST(PathSizing, FetchCapIsTwoStepsOfLinkPerLayer) {
  SmartgenOptions o;
  EXPECT_EQ(FetchCapBlocks(o, 0, 10, 4096, 30), kDefaultFetchCapBlocks);
  // 12.288 MB/s x 20 ms / 4096 B / 30 layers = 2 blocks.
  EXPECT_EQ(FetchCapBlocks(o, 12.288e6, 10, 4096, 30), 2);
  EXPECT_EQ(FetchCapBlocks(o, 1e12, 10, 4096, 30), kDefaultFetchCapBlocks * 16);
  o.max_fetch_blocks = 5;
  EXPECT_EQ(FetchCapBlocks(o, 12.288e6, 10, 4096, 30), 5);
}

TEST(PathSizing, WaitBoundIsTheLargerOfStepShareAndLayerOwnTime) {
  SmartgenOptions o;  // share 0.15, slack 3 ms, factor 1, layer slack 0.05 ms
  // (0.15 x 20 + 3) / 30 = 0.2 ms against 0.1 + 0.05.
  EXPECT_NEAR(LayerWaitBoundMs(o, 20, 0.1, 30), 0.2, 1e-12);
  // A slow layer: its own time wins.
  EXPECT_NEAR(LayerWaitBoundMs(o, 20, 1.0, 30), 1.05, 1e-12);
  o.wait_bound_ms = 8;
  EXPECT_DOUBLE_EQ(LayerWaitBoundMs(o, 20, 1.0, 30), 8);
}

TEST(AutoMode, LayerwiseExactlyWhenTheLinkKeepsUpWithPrefill) {
  // 100 MB at 50 MB/s is 2000 ms of link.
  EXPECT_EQ(ChooseAutoMode(100e6, 50e6, 2000).choice, AutoChoice::kLayerwise);
  EXPECT_EQ(ChooseAutoMode(100e6, 50e6, 1999).choice, AutoChoice::kSmartgen);
  EXPECT_NEAR(ChooseAutoMode(100e6, 50e6, 1999).kv_link_ms, 2000, 1e-9);
  EXPECT_EQ(ChooseAutoMode(100e6, 0, 1).choice, AutoChoice::kLayerwise);  // rate unknown
  EXPECT_EQ(AutoChoiceName(AutoChoice::kSmartgen), "smartgen");
}

TEST(PathSizing, PredictionsAreCheckedBeforeTheyFetchThenFetchOnlyWhileHalfAreHits) {
  EXPECT_EQ(UsePrediction(0, 0), PredictionUse::kCheck);
  EXPECT_EQ(UsePrediction(kPredictionWarmupBlocks - 1, 0), PredictionUse::kCheck);  // unchecked
  EXPECT_EQ(UsePrediction(kPredictionWarmupBlocks - 1, kPredictionWarmupBlocks - 1),
            PredictionUse::kCheck);  // all hits so far, but too few to trust
  EXPECT_EQ(UsePrediction(kPredictionWarmupBlocks, 1), PredictionUse::kOff);
  EXPECT_EQ(UsePrediction(kPredictionWarmupBlocks, kPredictionWarmupBlocks * kPredictionMinHitRate),
            PredictionUse::kFetch);
  EXPECT_EQ(UsePrediction(1000, 499), PredictionUse::kOff);
  EXPECT_EQ(UsePrediction(1000, 500), PredictionUse::kFetch);
}

}  // namespace
}  // namespace smartgen::select
