#include "node/prefill/prefill_estimate.h"

#include <gtest/gtest.h>

namespace smartgen::node {
namespace {

// The SmolLM2-135M shape.
model::ModelConfig Smollm() {
  model::ModelConfig c;
  c.n_layers = 30;
  c.n_embd = 576;
  c.n_heads = 9;
  c.n_kv_heads = 3;
  c.head_dim = 64;
  c.n_ff = 1536;
  c.layers.resize(30);
  return c;
}

TEST(PrefillEstimate, BeforeAnyMeasurementAssumes500TokensPerSecond) {
  const model::ModelConfig c = Smollm();
  PrefillEstimate e(c);
  EXPECT_DOUBLE_EQ(e.Seconds(1000), 2.0);
}

TEST(PrefillEstimate, AMeasuredBucketIsUsedPerToken) {
  const model::ModelConfig c = Smollm();
  PrefillEstimate e(c);
  e.Record(4096, 6.0);
  EXPECT_NEAR(e.Seconds(4096), 6.0, 1e-9);
  EXPECT_NEAR(e.Seconds(5000), 6.0 * 5000 / 4096, 1e-9);  // the same bucket: per token
}

// A short start-up prefill scaled to a long prompt grows faster than linearly (attention),
// by the compute ratio; a longer measurement scales down the same way.
TEST(PrefillEstimate, OtherLengthsScaleByTheirCompute) {
  const model::ModelConfig c = Smollm();
  PrefillEstimate e(c);
  e.Record(256, 0.25);
  const double want = 0.25 * PrefillCost(c, 4096) / PrefillCost(c, 256);
  EXPECT_NEAR(e.Seconds(4096), want, 1e-9);
  EXPECT_GT(e.Seconds(4096), 0.25 * 16 * 1.3);  // attention: well above 16x the 256-token time
  PrefillEstimate longer(c);
  longer.Record(4096, 6.0);
  EXPECT_NEAR(longer.Seconds(512), 6.0 * PrefillCost(c, 512) / PrefillCost(c, 4096), 1e-9);
}

TEST(PrefillEstimate, ASlidingLayerAttendsAtMostItsWindow) {
  model::ModelConfig global = Smollm();
  model::ModelConfig windowed = global;
  windowed.sliding_window = 128;
  for (auto& l : windowed.layers) l.sliding = true, l.window = 128;
  // Beyond the window a windowed model's cost per token stops growing.
  EXPECT_NEAR(PrefillCost(windowed, 8192) / 8192, PrefillCost(windowed, 4096) / 4096,
              1e-6 * PrefillCost(windowed, 4096) / 4096);
  EXPECT_GT(PrefillCost(global, 8192) / 8192, PrefillCost(global, 4096) / 4096);
}

}  // namespace
}  // namespace smartgen::node
