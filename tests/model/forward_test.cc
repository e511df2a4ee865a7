// Invariants of the forward pass on a synthetic model: batching, chunking, KV dtype, hooks,
// attention overrides, and bad input.
#include "model/forward.h"

#include <cmath>
#include <memory>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/attention.h"
#include "kernels/lse_merge.h"
#include "model/generate.h"
#include "model/synthetic_model.h"

namespace smartgen::model {
namespace {

// One tiny model per architecture, written once per test binary.
std::unique_ptr<Model> MakeModel(const char* preset, gguf::GgmlType type = gguf::GgmlType::kF32) {
  SyntheticModelSpec spec;
  spec.preset = *FindPreset(preset);
  spec.type = type;
  spec.seed = 7;
  spec.out = ::testing::TempDir() + "/forward_test_" + preset + ".gguf";
  const Status s = WriteSyntheticModel(spec);
  EXPECT_TRUE(s.ok()) << s.ToString();
  auto m = Model::Load(spec.out);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(*m) : nullptr;
}

std::vector<std::int32_t> Tokens(int n, int salt) {
  std::vector<std::int32_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = 3 + (i * 37 + salt * 101) % 250;
  return t;
}

double MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, double(std::abs(a[i] - b[i])));
  return m;
}

// One decode step of seqs[i] with token next[i] each, its logits into (*logits)[i].
std::vector<ForwardChunk> DecodeBatch(const std::vector<std::unique_ptr<kv::SequenceKv>>& seqs,
                                      const std::int32_t* next,
                                      std::vector<std::vector<float>>* logits) {
  logits->assign(seqs.size(), {});
  std::vector<ForwardChunk> batch(seqs.size());
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    batch[i].kv = seqs[i].get();
    batch[i].tokens = std::span<const std::int32_t>(&next[i], 1);
    batch[i].logits = &(*logits)[i];
  }
  return batch;
}

class ForwardTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    model_ = MakeModel(GetParam());
    ASSERT_NE(model_, nullptr);
    pool_ = std::make_unique<core::ThreadPool>(2);
    forward_ = std::make_unique<Forward>(*model_, pool_.get());
    blocks_ = std::make_unique<kv::BlockPool>(forward_->KvGeometryFor(kv::KvDType::kF32, 16), 1 << 14);
  }

  // Last-token logits after feeding `tokens` to a fresh sequence in pieces of `piece` tokens.
  std::vector<float> RunInPieces(const std::vector<std::int32_t>& tokens, std::size_t piece) {
    kv::SequenceKv seq(blocks_.get());
    std::vector<float> logits;
    for (std::size_t at = 0; at < tokens.size(); at += piece) {
      ForwardChunk c;
      c.kv = &seq;
      c.tokens = std::span<const std::int32_t>(tokens).subspan(at, std::min(piece, tokens.size() - at));
      c.logits = &logits;
      ForwardChunk cs[1] = {c};
      EXPECT_TRUE(forward_->Run(cs).ok());
    }
    return logits;
  }

  // A fresh sequence per prompt, each prompt prefilled alone.
  std::vector<std::unique_ptr<kv::SequenceKv>> Prefilled(
      const std::vector<std::vector<std::int32_t>>& prompts) {
    std::vector<std::unique_ptr<kv::SequenceKv>> seqs;
    for (const auto& prompt : prompts) {
      seqs.push_back(std::make_unique<kv::SequenceKv>(blocks_.get()));
      ForwardChunk c;
      c.kv = seqs.back().get();
      c.tokens = prompt;
      ForwardChunk cs[1] = {c};
      EXPECT_TRUE(forward_->Run(cs).ok());
    }
    return seqs;
  }

  std::unique_ptr<Model> model_;
  std::unique_ptr<core::ThreadPool> pool_;
  std::unique_ptr<Forward> forward_;
  std::unique_ptr<kv::BlockPool> blocks_;
};

TEST_P(ForwardTest, ChunkedPrefillEqualsOneShotAndTokenByToken) {
  const auto tokens = Tokens(53, 1);
  const auto whole = RunInPieces(tokens, tokens.size());
  EXPECT_LT(MaxDiff(whole, RunInPieces(tokens, 16)), 1e-5);
  EXPECT_LT(MaxDiff(whole, RunInPieces(tokens, 7)), 1e-5);
  EXPECT_LT(MaxDiff(whole, RunInPieces(tokens, 1)), 1e-5);
}

// A long prompt runs in micro-batches, chunk-major through RunOne and layer-major through Run:
// the scratch stays at the micro-batch and the logits are those of the prompt as one chunk.
TEST_P(ForwardTest, LongPromptRunsInMicroBatchesWithTheSameLogits) {
  const auto tokens = Tokens(1100, 2);
  kv::SequenceKv seq(blocks_.get());
  std::vector<float> logits;
  ASSERT_TRUE(forward_->RunOne(&seq, tokens, &logits).ok());
  EXPECT_EQ(seq.n_tokens(), 1100);
  EXPECT_EQ(forward_->scratch_tokens(), kMicroBatchTokens);
  EXPECT_EQ(forward_->residual_tokens(), kMicroBatchTokens);
  EXPECT_LT(MaxDiff(logits, RunInPieces(tokens, tokens.size())), 1e-5);
  EXPECT_EQ(forward_->scratch_tokens(), kMicroBatchTokens);  // Run micro-batches too
  EXPECT_EQ(forward_->residual_tokens(), 1100);              // but keeps the whole residual
  Forward one_chunk(*model_, pool_.get(), ForwardOptions{.micro_batch_tokens = 1 << 20});
  kv::SequenceKv one_seq(blocks_.get());
  std::vector<float> one_logits;
  ASSERT_TRUE(one_chunk.RunOne(&one_seq, tokens, &one_logits).ok());
  EXPECT_EQ(one_chunk.scratch_tokens(), 1100);
  EXPECT_LT(MaxDiff(logits, one_logits), 1e-5);
}

TEST_P(ForwardTest, BatchedDecodeEqualsSeparateSequences) {
  // Three sequences with different prompt lengths decode one token each in one batch.
  const int lens[] = {5, 17, 33};
  const std::vector<std::vector<std::int32_t>> prompts = {Tokens(lens[0], 0), Tokens(lens[1], 1),
                                                          Tokens(lens[2], 2)};
  const auto seqs = Prefilled(prompts);
  const std::int32_t next[3] = {11, 22, 33};
  std::vector<std::vector<float>> batched;
  std::vector<ForwardChunk> batch = DecodeBatch(seqs, next, &batched);
  ASSERT_TRUE(forward_->Run(batch).ok());
  for (int i = 0; i < 3; ++i) {
    auto alone = prompts[i];
    alone.push_back(next[i]);
    EXPECT_LT(MaxDiff(batched[i], RunInPieces(alone, alone.size())), 1e-5) << "sequence " << i;
    EXPECT_EQ(seqs[i]->n_tokens(), lens[i] + 1);
  }
}

// Consecutive batched steps of different shapes share the forward's batch logits buffer: each
// chunk still gets its own rows (a smaller batch after a larger one, chunks in another order,
// one chunk asking for every token's logits).
TEST_P(ForwardTest, ConsecutiveBatchesOfOtherShapesGetTheirOwnLogits) {
  std::vector<std::vector<std::int32_t>> histories = {Tokens(6, 10), Tokens(19, 11), Tokens(9, 12)};
  const auto seqs = Prefilled(histories);
  // Step 1: all three, one token each.
  const std::int32_t first[3] = {40, 41, 42};
  std::vector<std::vector<float>> out1;
  std::vector<ForwardChunk> batch1 = DecodeBatch(seqs, first, &out1);
  for (int i = 0; i < 3; ++i) histories[i].push_back(first[i]);
  ASSERT_TRUE(forward_->Run(batch1).ok());
  for (int i = 0; i < 3; ++i) {
    EXPECT_LT(MaxDiff(out1[i], RunInPieces(histories[i], histories[i].size())), 1e-5)
        << "step 1, sequence " << i;
  }
  // Step 2: sequence 2 then 0, the second with two tokens and the logits of both.
  const std::int32_t one[1] = {50};
  const std::int32_t two[2] = {51, 52};
  std::vector<float> out_a, out_b;
  std::vector<ForwardChunk> batch2(2);
  batch2[0].kv = seqs[2].get();
  batch2[0].tokens = one;
  batch2[0].logits = &out_a;
  batch2[1].kv = seqs[0].get();
  batch2[1].tokens = two;
  batch2[1].logits = &out_b;
  batch2[1].all_logits = true;
  ASSERT_TRUE(forward_->Run(batch2).ok());
  histories[2].push_back(50);
  EXPECT_LT(MaxDiff(out_a, RunInPieces(histories[2], histories[2].size())), 1e-5);
  const std::size_t vocab = out1[0].size();
  ASSERT_EQ(out_b.size(), 2 * vocab);
  histories[0].push_back(51);
  const std::vector<float> after_51 = RunInPieces(histories[0], histories[0].size());
  histories[0].push_back(52);
  const std::vector<float> after_52 = RunInPieces(histories[0], histories[0].size());
  EXPECT_LT(MaxDiff(std::vector<float>(out_b.begin(), out_b.begin() + vocab), after_51), 1e-5);
  EXPECT_LT(MaxDiff(std::vector<float>(out_b.begin() + vocab, out_b.end()), after_52), 1e-5);
}

TEST_P(ForwardTest, F16CacheStaysCloseToF32) {
  kv::BlockPool f16_blocks(forward_->KvGeometryFor(kv::KvDType::kF16, 16), 1 << 12);
  const auto tokens = Tokens(40, 3);
  kv::SequenceKv seq(&f16_blocks);
  std::vector<float> logits;
  ForwardChunk c;
  c.kv = &seq;
  c.tokens = tokens;
  c.logits = &logits;
  ForwardChunk cs[1] = {c};
  ASSERT_TRUE(forward_->Run(cs).ok());
  const double diff = MaxDiff(logits, RunInPieces(tokens, tokens.size()));
  EXPECT_LT(diff, 5e-3);
  EXPECT_GT(diff, 0.0) << "f16 rounding should be visible";
}

TEST_P(ForwardTest, LayerHookSeesEveryLayerInOrderWithItsRows) {
  kv::SequenceKv seq(blocks_.get());
  const auto tokens = Tokens(20, 4);
  std::vector<int> layers, q_layers;
  ForwardChunk c;
  c.kv = &seq;
  c.tokens = tokens;
  c.on_layer_q = [&](int layer, const float* q, std::int64_t n) {
    q_layers.push_back(layer);
    EXPECT_EQ(n, 20);
    float norm = 0;
    for (int d = 0; d < model_->config().q_dim(); ++d) norm += q[19 * model_->config().q_dim() + d] * q[d];
    EXPECT_NE(norm, 0.0f);
  };
  c.on_layer_kv = [&](int layer, std::int64_t first, std::int64_t n) {
    layers.push_back(layer);
    EXPECT_EQ(first, 0);
    EXPECT_EQ(n, 20);
    // The layer's rows are already in the cache: the last row of head 0 is not all zero.
    const float* k = reinterpret_cast<const float*>(seq.KRow(layer, 0, 19));
    float norm = 0;
    for (int d = 0; d < model_->config().head_dim; ++d) norm += k[d] * k[d];
    EXPECT_GT(norm, 0.0f);
  };
  ForwardChunk cs[1] = {c};
  ASSERT_TRUE(forward_->Run(cs).ok());
  std::vector<int> want(model_->config().n_layers);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(layers, want);
  EXPECT_EQ(q_layers, want);
}

// Attends over every block, split into two halves merged by LSE: must equal dense attention.
class SplitMergeAttention : public AttentionOverride {
 public:
  SplitMergeAttention(const ModelConfig& c, kv::SequenceKv* seq) : c_(c), seq_(seq) {}
  Status Attend(int layer, const float* q, std::int64_t pos, float* out) override {
    ++calls;
    const int g = c_.n_group();
    kernels::AttentionParams p{c_.head_dim, g, 1.0f / std::sqrt(float(c_.head_dim)),
                               seq_->geometry().dtype};
    std::vector<float> o2(static_cast<std::size_t>(g) * c_.head_dim), lse(g), lse2(g);
    for (int h = 0; h < c_.n_kv_heads; ++h) {
      std::vector<kernels::KvBlockRef> refs;
      seq_->AllRefs(layer, h, &refs);
      const std::size_t half = refs.size() / 2;
      const std::span<const kernels::KvBlockRef> all(refs);
      float* o = out + h * g * c_.head_dim;
      const float* qh = q + h * g * c_.head_dim;
      kernels::AttendBlocks(p, qh, pos, all.subspan(half), o, lse.data());
      kernels::AttendBlocks(p, qh, pos, all.subspan(0, half), o2.data(), lse2.data());
      for (int j = 0; j < g; ++j) {
        kernels::LseMergeInto(c_.head_dim, o + j * c_.head_dim, &lse[j], o2.data() + j * c_.head_dim, lse2[j]);
      }
    }
    return Status::Ok();
  }
  int calls = 0;

 private:
  const ModelConfig& c_;
  kv::SequenceKv* seq_;
};

class FailingAttention : public AttentionOverride {
 public:
  Status Attend(int, const float*, std::int64_t, float*) override {
    return Unavailable("link down");
  }
};

TEST_P(ForwardTest, AttentionOverrideOverAllBlocksReproducesDenseDecode) {
  const auto prompt = Tokens(45, 5);
  kv::SequenceKv seq(blocks_.get());
  ForwardChunk c;
  c.kv = &seq;
  c.tokens = prompt;
  ForwardChunk cs[1] = {c};
  ASSERT_TRUE(forward_->Run(cs).ok());

  SplitMergeAttention split(model_->config(), &seq);
  std::vector<float> logits;
  const std::int32_t next = 77;
  ForwardChunk d;
  d.kv = &seq;
  d.tokens = std::span<const std::int32_t>(&next, 1);
  d.logits = &logits;
  d.attention = &split;
  ForwardChunk ds[1] = {d};
  ASSERT_TRUE(forward_->Run(ds).ok());
  EXPECT_EQ(split.calls, model_->config().n_layers);

  auto all = prompt;
  all.push_back(next);
  EXPECT_LT(MaxDiff(logits, RunInPieces(all, all.size())), 1e-5);

  // A failing override fails the step and leaves the sequence as it was.
  FailingAttention fail;
  d.attention = &fail;
  ForwardChunk fs[1] = {d};
  const Status s = forward_->Run(fs);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(seq.n_tokens(), 46);
}

TEST_P(ForwardTest, RejectsBadInputWithoutChangingTheSequence) {
  kv::SequenceKv seq(blocks_.get());
  std::vector<std::int32_t> bad = {1, 2, model_->config().n_vocab};
  ForwardChunk c;
  c.kv = &seq;
  c.tokens = bad;
  ForwardChunk cs[1] = {c};
  EXPECT_EQ(forward_->Run(cs).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(seq.n_tokens(), 0);

  Forward short_ctx(*model_, pool_.get(), ForwardOptions{.max_context = 32});
  const auto long_prompt = Tokens(33, 6);
  c.tokens = long_prompt;
  ForwardChunk ls[1] = {c};
  const Status s = short_ctx.Run(ls);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_NE(s.message().find("context length 32"), std::string_view::npos) << s.ToString();
  EXPECT_EQ(seq.n_tokens(), 0);

  kv::BlockPool tiny(forward_->KvGeometryFor(kv::KvDType::kF32, 16), 4);
  kv::SequenceKv starved(&tiny);
  c.kv = &starved;
  c.tokens = Tokens(20, 7);
  ForwardChunk ss[1] = {c};
  const auto tokens = Tokens(20, 7);
  ss[0].tokens = tokens;
  EXPECT_EQ(forward_->Run(ss).code(), StatusCode::kResourceExhausted);
}

// Weights read into huge pages (what serving nodes load) compute exactly what the mapped file
// computes: the same bytes, only elsewhere.
TEST_P(ForwardTest, WeightsOnHugePagesGiveTheMappedFilesLogits) {
  const std::string path = model_->file().path();
  auto huge = Model::Load(path, core::FilePlacement::kHugePages);
  ASSERT_TRUE(huge.ok()) << huge.status().ToString();
  if (core::HugePagesAvailable()) {
    EXPECT_EQ((*huge)->file().placement(), core::FilePlacement::kHugePages);
  }
  const auto tokens = Tokens(40, 3);
  const auto mapped = RunInPieces(tokens, tokens.size());
  Forward forward(**huge, pool_.get());
  kv::SequenceKv seq(blocks_.get());
  std::vector<float> logits;
  ASSERT_TRUE(forward.RunOne(&seq, tokens, &logits).ok());
  ASSERT_EQ(logits.size(), mapped.size());
  EXPECT_EQ(MaxDiff(logits, mapped), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Archs, ForwardTest,
                         ::testing::Values("tiny", "tiny-qwen2", "tiny-qwen3"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s) if (ch == '-') ch = '_';
                           return s;
                         });

TEST(Sampler, GreedyTakesTheLowestIdOnTies) {
  const std::vector<float> logits = {0.5f, 2.0f, 2.0f, -1.0f};
  EXPECT_EQ(Greedy(logits), 1);
  Sampler s({/*temperature=*/0.0f, 0, 1.0f, 3});
  EXPECT_EQ(s.Sample(logits), 1);
}

TEST(Sampler, SameSeedSameTokensAndFiltersRestrictTheChoice) {
  std::vector<float> logits(100);
  for (int i = 0; i < 100; ++i) logits[i] = std::sin(i * 0.7f) * 3.0f;
  auto draw = [&](SamplingParams p) {
    Sampler s(p);
    std::vector<std::int32_t> out;
    for (int i = 0; i < 200; ++i) out.push_back(s.Sample(logits));
    return out;
  };
  const SamplingParams hot{1.0f, 0, 1.0f, 42};
  EXPECT_EQ(draw(hot), draw(hot));
  EXPECT_NE(draw(hot), draw({1.0f, 0, 1.0f, 43}));
  // Continuing at step k draws what a fresh sampler draws at step k.
  Sampler fresh(hot);
  std::vector<std::int32_t> first_three;
  for (int i = 0; i < 3; ++i) first_three.push_back(fresh.Sample(logits));
  Sampler resumed(hot, 2);
  EXPECT_EQ(resumed.Sample(logits), first_three[2]);
  // top_k = 1 and a tiny top_p are greedy.
  for (auto t : draw({1.0f, 1, 1.0f, 1})) EXPECT_EQ(t, Greedy(logits));
  for (auto t : draw({1.0f, 0, 1e-6f, 1})) EXPECT_EQ(t, Greedy(logits));
  // top_k = 3 draws only from the three best.
  std::vector<std::int32_t> order(100);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  for (auto t : draw({2.0f, 3, 1.0f, 5})) {
    EXPECT_TRUE(t == order[0] || t == order[1] || t == order[2]) << t;
  }
}

}  // namespace
}  // namespace smartgen::model
