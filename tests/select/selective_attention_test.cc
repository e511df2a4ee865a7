// SelectiveAttention through model::Forward: every block chosen is dense attention; fewer
// blocks change the result; the tail is always attended.
#include "select/selective_attention.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/forward.h"
#include "model/sampler.h"
#include "select/block_summary.h"
#include "select/on_demand.h"
#include "test_util.h"

namespace smartgen::select {
namespace {

double MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::abs(a[i] - b[i])));
  return a.size() == b.size() ? m : 1e30;
}

std::vector<std::int32_t> Tokens(int n) {
  std::vector<std::int32_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = 3 + (i * 37 + 11) % 250;
  return t;
}

// The onDemand selector wrapped as a chooser.
class OnDemandChooser final : public BlockChooser {
 public:
  OnDemandChooser(OnDemandSelector* s, const std::vector<LayerSummaries>* sum) : s_(s), sum_(sum) {}
  Status Choose(int layer, const float* q, std::int64_t, LayerSelection* out) override {
    s_->Select(layer, q, (*sum_)[layer], out);
    return Status::Ok();
  }

 private:
  OnDemandSelector* s_;
  const std::vector<LayerSummaries>* sum_;
};

class SelectiveAttentionTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    model_ = testing::SyntheticModel(GetParam());
    ASSERT_NE(model_, nullptr);
    pool_ = std::make_unique<core::ThreadPool>(2);
    forward_ = std::make_unique<model::Forward>(*model_, pool_.get());
    blocks_ =
        std::make_unique<kv::BlockPool>(forward_->KvGeometryFor(kv::KvDType::kF32, 16), 1 << 12);
  }

  // Prefills `prompt`, then decodes `steps` teacher-forced tokens with `chooser` (null =
  // dense); returns every step's logits, concatenated.
  std::vector<float> Decode(const std::vector<std::int32_t>& prompt, int steps,
                            BlockChooser* chooser,
                            std::vector<LayerSummaries>* summaries = nullptr) {
    kv::SequenceKv seq(blocks_.get());
    std::vector<float> logits, all;
    model::ForwardChunk c;
    c.kv = &seq;
    c.tokens = prompt;
    c.logits = &logits;
    model::ForwardChunk cs[1] = {c};
    EXPECT_TRUE(forward_->Run(cs).ok());
    if (summaries) {
      summaries->clear();
      for (int l = 0; l < model_->config().n_layers; ++l) {
        summaries->push_back(LayerSummaries::Build(seq, l, std::ssize(prompt)));
      }
    }
    SelectiveAttention attention(model_->config(), &seq, std::ssize(prompt), chooser);
    for (int i = 0; i < steps; ++i) {
      const std::int32_t token = 5 + (i * 13) % 200;
      model::ForwardChunk d;
      d.kv = &seq;
      d.tokens = std::span<const std::int32_t>(&token, 1);
      d.logits = &logits;
      d.attention = chooser ? &attention : nullptr;
      model::ForwardChunk ds[1] = {d};
      EXPECT_TRUE(forward_->Run(ds).ok());
      all.insert(all.end(), logits.begin(), logits.end());
    }
    return all;
  }

  std::unique_ptr<model::Model> model_;
  std::unique_ptr<core::ThreadPool> pool_;
  std::unique_ptr<model::Forward> forward_;
  std::unique_ptr<kv::BlockPool> blocks_;
};

TEST_P(SelectiveAttentionTest, EveryBlockChosenEqualsDenseLogits) {
  for (int n : {16, 53, 100}) {  // a whole block, partial last blocks
    const auto prompt = Tokens(n);
    const auto dense = Decode(prompt, 20, nullptr);
    AllBlocksChooser all(model_->config().n_kv_heads, static_cast<std::int32_t>((n + 15) / 16));
    EXPECT_LT(MaxDiff(dense, Decode(prompt, 20, &all)), 1e-5) << n << " prompt tokens";
  }
}

TEST_P(SelectiveAttentionTest, OnDemandWithBudgetCoveringAllEqualsDense) {
  const auto prompt = Tokens(150);
  const auto dense = Decode(prompt, 8, nullptr);
  OnDemandOptions o;
  o.budget_blocks = 10;  // 10 blocks: every block but sinks and local window
  OnDemandSelector selector(model_->config(), 10, o, nullptr);
  std::vector<LayerSummaries> summaries;
  {
    // Summaries come from a prefill of the same prompt (identical K).
    Decode(prompt, 0, nullptr, &summaries);
  }
  OnDemandChooser chooser(&selector, &summaries);
  EXPECT_LT(MaxDiff(dense, Decode(prompt, 8, &chooser)), 1e-5);
}

TEST_P(SelectiveAttentionTest, FewerBlocksChangeTheResult) {
  const auto prompt = Tokens(150);
  const auto dense = Decode(prompt, 4, nullptr);
  OnDemandOptions o;
  o.budget_blocks = 1;
  o.local_blocks = 1;
  OnDemandSelector selector(model_->config(), 10, o, nullptr);
  std::vector<LayerSummaries> summaries;
  Decode(prompt, 0, nullptr, &summaries);
  OnDemandChooser chooser(&selector, &summaries);
  EXPECT_GT(MaxDiff(dense, Decode(prompt, 4, &chooser)), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Archs, SelectiveAttentionTest, ::testing::Values("tiny", "tiny-qwen3"));

TEST(SelectedRefs, ClipsPromptBlocksAndAddsTheTailInPositionOrder) {
  const kv::KvGeometry g{1, 1, 4, 16, kv::KvDType::kF32};
  kv::BlockPool pool(g, 64);
  const std::int64_t n = 40;  // blocks 0, 1, 2 (2 holds prompt 32..39 and tail 40..)
  std::vector<float> keys(std::size_t(60) * 4, 1.0f);
  auto seq = testing::FillSequence(&pool, 60, keys, keys);
  std::vector<kernels::KvBlockRef> refs;
  SelectedRefs(*seq, 0, 0, n, {0, 2}, 50, &refs);
  ASSERT_EQ(refs.size(), 4u);
  EXPECT_EQ(refs[0].first_pos, 0);
  EXPECT_EQ(refs[0].n_tokens, 16);
  EXPECT_EQ(refs[1].first_pos, 32);
  EXPECT_EQ(refs[1].n_tokens, 8);
  EXPECT_EQ(refs[2].first_pos, 40);  // the tail, starting in the same physical block
  EXPECT_EQ(refs[2].n_tokens, 8);
  EXPECT_EQ(static_cast<const float*>(refs[2].k), static_cast<const float*>(refs[1].k) + 8 * 4);
  EXPECT_EQ(refs[3].first_pos, 48);
  EXPECT_EQ(refs[3].n_tokens, 3);
}

}  // namespace
}  // namespace smartgen::select
