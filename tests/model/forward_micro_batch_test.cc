// Forward's layer-major micro-batches (model/forward.h): a hooked batch longer than the
// micro-batch gives the logits, KV rows, hook order and hook queries of the one-chunk pass,
// with the activation scratch sized by the micro-batch; mixed batches split across micro-batches
// give what each sequence gives alone.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "model/forward.h"
#include "model/synthetic_model.h"

namespace smartgen::model {
namespace {

constexpr std::int64_t kOneChunkTokens = 1 << 20;  // a micro-batch past every batch here

std::unique_ptr<Model> MakeMbModel(const std::string& preset) {
  SyntheticModelSpec spec;
  spec.preset = *FindPreset(preset);
  spec.seed = 11;
  spec.out = ::testing::TempDir() + "/forward_micro_batch_test_" + preset + ".gguf";
  const Status s = WriteSyntheticModel(spec);
  EXPECT_TRUE(s.ok()) << s.ToString();
  auto m = Model::Load(spec.out);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(*m) : nullptr;
}

std::vector<std::int32_t> MbTokens(int n, int salt) {
  std::vector<std::int32_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = 3 + (i * 53 + salt * 97) % 250;
  return t;
}

double MbMaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    m = std::max(m, double(std::abs(a[i] - b[i])));
  return m;
}

// Layer `layer`'s K rows then V rows of positions [0, n), every KV head (an f32 cache).
std::vector<float> MbLayerKv(kv::SequenceKv& seq, int layer, std::int64_t n) {
  const kv::KvGeometry& g = seq.geometry();
  std::vector<float> out;
  for (int h = 0; h < g.n_kv_heads; ++h) {
    for (std::int64_t p = 0; p < n; ++p) {
      const auto* k = reinterpret_cast<const float*>(seq.KRow(layer, h, p));
      const auto* v = reinterpret_cast<const float*>(seq.VRow(layer, h, p));
      out.insert(out.end(), k, k + g.head_dim);
      out.insert(out.end(), v, v + g.head_dim);
    }
  }
  return out;
}

// What the hooks of one chunk saw.
struct HookSeen {
  std::vector<std::string> order;      // "q0", "kv0", "q1", ...
  std::vector<std::vector<float>> q;   // per layer, the rows on_layer_q received
  std::vector<std::vector<float>> kv;  // per layer, its K/V when on_layer_kv ran
};

void HookChunk(ForwardChunk& c, const ModelConfig& config, std::int64_t query_rows,
               HookSeen* seen) {
  c.query_rows = query_rows;
  c.on_layer_q = [seen, &config](int layer, const float* q, std::int64_t rows) {
    seen->order.push_back("q" + std::to_string(layer));
    seen->q.emplace_back(q, q + rows * config.q_dim());
  };
  c.on_layer_kv = [seen, &c](int layer, std::int64_t first, std::int64_t n) {
    seen->order.push_back("kv" + std::to_string(layer));
    seen->kv.push_back(MbLayerKv(*c.kv, layer, first + n));
  };
}

// A decode step's attention through the override, over every block: dense attention.
class AllBlocksAttention : public AttentionOverride {
 public:
  AllBlocksAttention(const ModelConfig& c, kv::SequenceKv* seq) : c_(c), seq_(seq) {}
  Status Attend(int layer, const float* q, std::int64_t pos, float* out) override {
    const kernels::AttentionParams p = c_.LayerAttention(layer, seq_->geometry().dtype);
    std::vector<float> lse(c_.n_group());
    for (int h = 0; h < c_.n_kv_heads; ++h) {
      std::vector<kernels::KvBlockRef> refs;
      seq_->AllRefs(layer, h, &refs);
      const int off = h * c_.n_group() * c_.head_dim;
      kernels::AttendBlocks(p, q + off, pos, refs, out + off, lse.data());
    }
    ++calls;
    return Status::Ok();
  }
  int calls = 0;

 private:
  const ModelConfig& c_;
  kv::SequenceKv* seq_;
};

class ForwardMicroBatchTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    model_ = MakeMbModel(GetParam());
    ASSERT_NE(model_, nullptr);
    pool_ = std::make_unique<core::ThreadPool>(2);
    blocks_ =
        std::make_unique<kv::BlockPool>(kv::KvGeometry{config().n_layers, config().n_kv_heads,
                                                       config().head_dim, 16, kv::KvDType::kF32},
                                        1 << 13);
  }
  const ModelConfig& config() const { return model_->config(); }
  std::unique_ptr<Forward> MakeForward(std::int64_t micro_batch) {
    ForwardOptions o;
    o.micro_batch_tokens = micro_batch;
    return std::make_unique<Forward>(*model_, pool_.get(), o);
  }
  // Last-token logits of `tokens` fed to `seq` (fresh or not) as one hooked chunk.
  std::vector<float> RunHooked(Forward& f, kv::SequenceKv* seq,
                               const std::vector<std::int32_t>& tokens, std::int64_t query_rows,
                               HookSeen* seen) {
    std::vector<float> logits;
    ForwardChunk c;
    c.kv = seq;
    c.tokens = tokens;
    c.logits = &logits;
    ForwardChunk cs[1] = {c};
    HookChunk(cs[0], config(), query_rows, seen);
    const Status s = f.Run(cs);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return logits;
  }

  std::unique_ptr<Model> model_;
  std::unique_ptr<core::ThreadPool> pool_;
  std::unique_ptr<kv::BlockPool> blocks_;
};

TEST_P(ForwardMicroBatchTest, HookedLongPromptEqualsOneChunkAndRunOne) {
  // 150 tokens in micro-batches of 64: 22 + 64 + 64 rows.
  constexpr std::int64_t kMicro = 64;
  const auto tokens = MbTokens(150, 1);
  const int n_layers = config().n_layers;
  std::vector<std::string> want_order;
  for (int l = 0; l < n_layers; ++l) {
    want_order.push_back("q" + std::to_string(l));
    want_order.push_back("kv" + std::to_string(l));
  }

  auto plain = MakeForward(kMicro);
  kv::SequenceKv plain_seq(blocks_.get());
  std::vector<float> plain_logits;
  ASSERT_TRUE(plain->RunOne(&plain_seq, tokens, &plain_logits).ok());

  // 32 rows: all in the last micro-batch; 100: across two; 0: every row.
  for (const std::int64_t query_rows : {32, 100, 0}) {
    SCOPED_TRACE("query_rows " + std::to_string(query_rows));
    auto one = MakeForward(kOneChunkTokens);
    kv::SequenceKv one_seq(blocks_.get());
    HookSeen one_seen;
    const auto one_logits = RunHooked(*one, &one_seq, tokens, query_rows, &one_seen);
    EXPECT_EQ(one->scratch_tokens(), 150);

    auto micro = MakeForward(kMicro);
    kv::SequenceKv seq(blocks_.get());
    HookSeen seen;
    const auto logits = RunHooked(*micro, &seq, tokens, query_rows, &seen);
    EXPECT_EQ(seq.n_tokens(), 150);
    EXPECT_EQ(micro->scratch_tokens(), kMicro);
    EXPECT_EQ(micro->residual_tokens(), 150);

    EXPECT_LT(MbMaxDiff(logits, one_logits), 1e-5);
    EXPECT_LT(MbMaxDiff(logits, plain_logits), 1e-5);
    EXPECT_EQ(seen.order, want_order);
    EXPECT_EQ(one_seen.order, want_order);
    ASSERT_EQ(seen.q.size(), static_cast<std::size_t>(n_layers));
    ASSERT_EQ(seen.kv.size(), static_cast<std::size_t>(n_layers));
    const std::int64_t rows = query_rows > 0 ? query_rows : 150;
    for (int l = 0; l < n_layers; ++l) {
      SCOPED_TRACE("layer " + std::to_string(l));
      EXPECT_EQ(seen.q[l].size(), static_cast<std::size_t>(rows * config().q_dim()));
      EXPECT_LT(MbMaxDiff(seen.q[l], one_seen.q[l]), 1e-5);
      // The layer's K/V were whole when its hook ran: as after the pass, and as one chunk's.
      const auto final_kv = MbLayerKv(seq, l, 150);
      EXPECT_EQ(seen.kv[l], final_kv);
      EXPECT_LT(MbMaxDiff(final_kv, MbLayerKv(one_seq, l, 150)), 1e-5);
      EXPECT_LT(MbMaxDiff(final_kv, MbLayerKv(plain_seq, l, 150)), 1e-5);
    }
  }
}

TEST_P(ForwardMicroBatchTest, MixedBatchAcrossMicroBatchesEqualsEachSequenceAlone) {
  // Rows: an overridden decode step, a 40-token prompt (hooked, its last 20 queries), and two
  // decode steps: 43 rows in micro-batches of 16 (11 + 16 + 16), the prompt across all three.
  constexpr std::int64_t kMicro = 16;
  const int prompt_lens[] = {20, 7, 33};  // the decode sequences' prompts
  const std::int32_t next[] = {41, 42, 43};
  std::vector<std::unique_ptr<kv::SequenceKv>> decode_seqs, alone_seqs;
  auto one = MakeForward(kOneChunkTokens);
  for (int i = 0; i < 3; ++i) {
    for (auto* seqs : {&decode_seqs, &alone_seqs}) {
      seqs->push_back(std::make_unique<kv::SequenceKv>(blocks_.get()));
      ASSERT_TRUE(one->RunOne(seqs->back().get(), MbTokens(prompt_lens[i], i + 2), nullptr).ok());
    }
  }
  const auto prompt = MbTokens(40, 9);

  auto micro = MakeForward(kMicro);
  AllBlocksAttention override_attention(config(), decode_seqs[0].get());
  kv::SequenceKv prompt_seq(blocks_.get());
  std::vector<std::vector<float>> logits(4);
  std::vector<ForwardChunk> batch(4);
  HookSeen seen;
  batch[0].kv = decode_seqs[0].get();
  batch[0].tokens = std::span<const std::int32_t>(&next[0], 1);
  batch[0].attention = &override_attention;
  batch[1].kv = &prompt_seq;
  batch[1].tokens = prompt;
  for (int i = 2; i < 4; ++i) {
    batch[i].kv = decode_seqs[i - 1].get();
    batch[i].tokens = std::span<const std::int32_t>(&next[i - 1], 1);
  }
  for (int i = 0; i < 4; ++i) batch[i].logits = &logits[i];
  HookChunk(batch[1], config(), 20, &seen);
  ASSERT_TRUE(micro->Run(batch).ok());
  EXPECT_EQ(micro->scratch_tokens(), kMicro);
  EXPECT_EQ(override_attention.calls, config().n_layers);

  HookSeen alone_seen;
  kv::SequenceKv alone_prompt(blocks_.get());
  const auto alone_logits = RunHooked(*one, &alone_prompt, prompt, 20, &alone_seen);
  EXPECT_LT(MbMaxDiff(logits[1], alone_logits), 1e-5);
  EXPECT_EQ(seen.order.size(), alone_seen.order.size());
  for (std::size_t l = 0; l < seen.q.size() && l < alone_seen.q.size(); ++l) {
    EXPECT_LT(MbMaxDiff(seen.q[l], alone_seen.q[l]), 1e-5) << "layer " << l;
  }
  for (int i = 0; i < 3; ++i) {
    std::vector<float> want;
    ASSERT_TRUE(
        one->RunOne(alone_seqs[i].get(), std::span<const std::int32_t>(&next[i], 1), &want).ok());
    const std::vector<float>& got = logits[i == 0 ? 0 : i + 1];
    EXPECT_LT(MbMaxDiff(got, want), 1e-5) << "decode sequence " << i;
    for (int l = 0; l < config().n_layers; ++l) {
      EXPECT_LT(MbMaxDiff(MbLayerKv(*decode_seqs[i], l, prompt_lens[i] + 1),
                          MbLayerKv(*alone_seqs[i], l, prompt_lens[i] + 1)),
                1e-5);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, ForwardMicroBatchTest,
                         ::testing::Values("tiny", "tiny-qwen2", "tiny-qwen3", "tiny-gemma2",
                                           "tiny-gemma3", "tiny-phi3"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s)
                             if (ch == '-') ch = '_';
                           return s;
                         });

}  // namespace
}  // namespace smartgen::model
