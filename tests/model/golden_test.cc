// The forward pass against golden outputs produced by llama.cpp (and float64 references) in
// ../shared/golden: tokenization, logits at every prompt position, layer-0 K after RoPE, and
// the 32-step greedy continuation (teacher-forced logits and free-running tokens). Tolerances
// follow ../shared/golden/README.md and ../shared/golden/quant/README.md.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "kernels/matmul.h"
#include "kv/block_pool.h"
#include "kv/sequence_kv.h"
#include "model/forward.h"
#include "model/generate.h"
#include "model/model.h"

namespace smartgen::model {
namespace {

using nlohmann::json;

struct GoldenCase {
  const char* name;
  const char* model;   // relative to SMARTGEN_SHARED_DIR
  const char* golden;  // relative to SMARTGEN_SHARED_DIR
  double tol;          // max |logit diff|
  bool relative;       // tol is relative to max |logit| of the position
  // kernels::SetFastDot: Q8_0 / Q4_0 / Q5_0 / Q4_1 / Q5_1 / K-quant / IQ4 decode with int8
  // activations, BF16 with bf16 ones (what smartgen run / bench engine use by default); the
  // exact cases keep the f32 path.
  bool fast_dot = false;
};

std::ostream& operator<<(std::ostream& os, const GoldenCase& c) { return os << c.name; }

const GoldenCase kCases[] = {
    {"stories260K", "models/stories260K.gguf", "golden/stories260K.json", 1e-4, true},
    {"tiny_llama_spm", "golden/tiny-llama-spm.gguf", "golden/tiny-llama-spm.json", 1e-4, false},
    {"tiny_llama_bpe", "golden/tiny-llama-bpe.gguf", "golden/tiny-llama-bpe.json", 1e-4, false},
    {"tiny_qwen2", "golden/tiny-qwen2.gguf", "golden/tiny-qwen2.json", 1e-4, false},
    {"tiny_qwen3", "golden/tiny-qwen3.gguf", "golden/tiny-qwen3.json", 1e-4, false},
    // Quantized weights: an engine that dequantizes exactly and computes in f32 is checked
    // against the float64 reference at 1e-5 (quant/README.md, "Recommended tolerances").
    {"q_f32", "golden/quant/tiny-llama-q-f32.gguf", "golden/quant/tiny-llama-q-f32.ref64.json", 1e-5, false},
    {"q_f16", "golden/quant/tiny-llama-q-f16.gguf", "golden/quant/tiny-llama-q-f16.ref64.json", 1e-5, false},
    {"q_bf16", "golden/quant/tiny-llama-q-bf16.gguf", "golden/quant/tiny-llama-q-bf16.ref64.json", 1e-5, false},
    {"q_q8_0", "golden/quant/tiny-llama-q-q8_0.gguf", "golden/quant/tiny-llama-q-q8_0.ref64.json", 1e-5, false},
    {"q_q4_0", "golden/quant/tiny-llama-q-q4_0.gguf", "golden/quant/tiny-llama-q-q4_0.ref64.json", 1e-5, false},
    {"q_q4_k_m", "golden/quant/tiny-llama-q-q4_k_m.gguf", "golden/quant/tiny-llama-q-q4_k_m.ref64.json", 1e-5, false},
    {"q_q6_k", "golden/quant/tiny-llama-q-q6_k.gguf", "golden/quant/tiny-llama-q-q6_k.ref64.json", 1e-5, false},
    // The same files against llama.cpp's own outputs, at the llama.cpp-column tolerances.
    {"q_f32_llamacpp", "golden/quant/tiny-llama-q-f32.gguf", "golden/quant/tiny-llama-q-f32.json", 1e-4, false},
    {"q_f16_llamacpp", "golden/quant/tiny-llama-q-f16.gguf", "golden/quant/tiny-llama-q-f16.json", 2e-3, false},
    {"q_bf16_llamacpp", "golden/quant/tiny-llama-q-bf16.gguf", "golden/quant/tiny-llama-q-bf16.json", 1.5e-2, false},
    // Decode with bf16 activations (AVX512-BF16 where present), as llama.cpp computes BF16.
    {"q_bf16_fastdot_llamacpp", "golden/quant/tiny-llama-q-bf16.gguf", "golden/quant/tiny-llama-q-bf16.json", 1.5e-2, false, true},
    {"q_q8_0_llamacpp", "golden/quant/tiny-llama-q-q8_0.gguf", "golden/quant/tiny-llama-q-q8_0.json", 4e-2, false},
    // Decode with int8 activations (AVX-512 VNNI where present), as llama.cpp computes Q8_0.
    {"q_q8_0_fastdot_llamacpp", "golden/quant/tiny-llama-q-q8_0.gguf", "golden/quant/tiny-llama-q-q8_0.json", 4e-2, false, true},
    {"q_q4_0_llamacpp", "golden/quant/tiny-llama-q-q4_0.gguf", "golden/quant/tiny-llama-q-q4_0.json", 4e-2, false},
    // Q4_0 decode with int8 activations (VNNI); Q4_K_M files hold Q4_0 / Q8_0 matrices too.
    {"q_q4_0_fastdot_llamacpp", "golden/quant/tiny-llama-q-q4_0.gguf", "golden/quant/tiny-llama-q-q4_0.json", 4e-2, false, true},
    {"q_q4_k_m_llamacpp", "golden/quant/tiny-llama-q-q4_k_m.gguf", "golden/quant/tiny-llama-q-q4_k_m.json", 5e-2, false},
    {"q_q4_k_m_fastdot_llamacpp", "golden/quant/tiny-llama-q-q4_k_m.gguf", "golden/quant/tiny-llama-q-q4_k_m.json", 5e-2, false, true},
    {"w192_q4_k_m_fastdot_llamacpp", "golden/quant2/tiny-llama-w192-q4_k_m.gguf", "golden/quant2/tiny-llama-w192-q4_k_m.json", 6e-2, false, true},
    {"q_q6_k_llamacpp", "golden/quant/tiny-llama-q-q6_k.gguf", "golden/quant/tiny-llama-q-q6_k.json", 5e-2, false},
    // Q6_K (and Q4_K below) decode with int8 activations (VNNI where present).
    {"q_q6_k_fastdot_llamacpp", "golden/quant/tiny-llama-q-q6_k.gguf", "golden/quant/tiny-llama-q-q6_k.json", 5e-2, false, true},
    // quant2 (../shared/golden/quant2/README.md): every further llama-quantize type, and the
    // 192-wide model whose Q4_K_M / Q5_K_M files fall back to Q5_0 / Q5_1 / Q8_0. An exact
    // f32 engine: 1e-5 against the float64 reference, 6e-2 against llama.cpp.
    {"q2_q4_1", "golden/quant2/tiny-llama-q-q4_1.gguf", "golden/quant2/tiny-llama-q-q4_1.ref64.json", 1e-5, false},
    {"q2_q5_0", "golden/quant2/tiny-llama-q-q5_0.gguf", "golden/quant2/tiny-llama-q-q5_0.ref64.json", 1e-5, false},
    {"q2_q5_1", "golden/quant2/tiny-llama-q-q5_1.gguf", "golden/quant2/tiny-llama-q-q5_1.ref64.json", 1e-5, false},
    {"q2_q2_k", "golden/quant2/tiny-llama-q-q2_k.gguf", "golden/quant2/tiny-llama-q-q2_k.ref64.json", 1e-5, false},
    {"q2_q3_k_s", "golden/quant2/tiny-llama-q-q3_k_s.gguf", "golden/quant2/tiny-llama-q-q3_k_s.ref64.json", 1e-5, false},
    {"q2_q3_k_m", "golden/quant2/tiny-llama-q-q3_k_m.gguf", "golden/quant2/tiny-llama-q-q3_k_m.ref64.json", 1e-5, false},
    {"q2_q4_k_s", "golden/quant2/tiny-llama-q-q4_k_s.gguf", "golden/quant2/tiny-llama-q-q4_k_s.ref64.json", 1e-5, false},
    {"q2_q5_k_s", "golden/quant2/tiny-llama-q-q5_k_s.gguf", "golden/quant2/tiny-llama-q-q5_k_s.ref64.json", 1e-5, false},
    {"q2_q5_k_m", "golden/quant2/tiny-llama-q-q5_k_m.gguf", "golden/quant2/tiny-llama-q-q5_k_m.ref64.json", 1e-5, false},
    {"q2_iq4_nl", "golden/quant2/tiny-llama-q-iq4_nl.gguf", "golden/quant2/tiny-llama-q-iq4_nl.ref64.json", 1e-5, false},
    {"q2_iq4_xs", "golden/quant2/tiny-llama-q-iq4_xs.gguf", "golden/quant2/tiny-llama-q-iq4_xs.ref64.json", 1e-5, false},
    {"w192_f32", "golden/quant2/tiny-llama-w192-f32.gguf", "golden/quant2/tiny-llama-w192-f32.ref64.json", 1e-5, false},
    {"w192_q4_k_m", "golden/quant2/tiny-llama-w192-q4_k_m.gguf", "golden/quant2/tiny-llama-w192-q4_k_m.ref64.json", 1e-5, false},
    {"w192_q5_k_m", "golden/quant2/tiny-llama-w192-q5_k_m.gguf", "golden/quant2/tiny-llama-w192-q5_k_m.ref64.json", 1e-5, false},
    {"q2_q4_1_llamacpp", "golden/quant2/tiny-llama-q-q4_1.gguf", "golden/quant2/tiny-llama-q-q4_1.json", 6e-2, false},
    {"q2_q5_0_llamacpp", "golden/quant2/tiny-llama-q-q5_0.gguf", "golden/quant2/tiny-llama-q-q5_0.json", 6e-2, false},
    {"q2_q5_1_llamacpp", "golden/quant2/tiny-llama-q-q5_1.gguf", "golden/quant2/tiny-llama-q-q5_1.json", 6e-2, false},
    {"q2_q2_k_llamacpp", "golden/quant2/tiny-llama-q-q2_k.gguf", "golden/quant2/tiny-llama-q-q2_k.json", 6e-2, false},
    {"q2_q3_k_s_llamacpp", "golden/quant2/tiny-llama-q-q3_k_s.gguf", "golden/quant2/tiny-llama-q-q3_k_s.json", 6e-2, false},
    {"q2_q3_k_m_llamacpp", "golden/quant2/tiny-llama-q-q3_k_m.gguf", "golden/quant2/tiny-llama-q-q3_k_m.json", 6e-2, false},
    {"q2_q4_k_s_llamacpp", "golden/quant2/tiny-llama-q-q4_k_s.gguf", "golden/quant2/tiny-llama-q-q4_k_s.json", 6e-2, false},
    {"q2_q4_k_s_fastdot_llamacpp", "golden/quant2/tiny-llama-q-q4_k_s.gguf", "golden/quant2/tiny-llama-q-q4_k_s.json", 6e-2, false, true},
    {"q2_q5_k_s_llamacpp", "golden/quant2/tiny-llama-q-q5_k_s.gguf", "golden/quant2/tiny-llama-q-q5_k_s.json", 6e-2, false},
    {"q2_q5_k_m_llamacpp", "golden/quant2/tiny-llama-q-q5_k_m.gguf", "golden/quant2/tiny-llama-q-q5_k_m.json", 6e-2, false},
    {"q2_iq4_nl_llamacpp", "golden/quant2/tiny-llama-q-iq4_nl.gguf", "golden/quant2/tiny-llama-q-iq4_nl.json", 6e-2, false},
    {"q2_iq4_xs_llamacpp", "golden/quant2/tiny-llama-q-iq4_xs.gguf", "golden/quant2/tiny-llama-q-iq4_xs.json", 6e-2, false},
    // Q4_1, Q5_1, Q2_K, Q3_K, Q5_K, IQ4_NL and IQ4_XS decode with int8 activations (VNNI where
    // present).
    {"q2_q2_k_fastdot_llamacpp", "golden/quant2/tiny-llama-q-q2_k.gguf", "golden/quant2/tiny-llama-q-q2_k.json", 6e-2, false, true},
    {"q2_q3_k_s_fastdot_llamacpp", "golden/quant2/tiny-llama-q-q3_k_s.gguf", "golden/quant2/tiny-llama-q-q3_k_s.json", 6e-2, false, true},
    {"q2_q3_k_m_fastdot_llamacpp", "golden/quant2/tiny-llama-q-q3_k_m.gguf", "golden/quant2/tiny-llama-q-q3_k_m.json", 6e-2, false, true},
    {"q2_q4_1_fastdot_llamacpp", "golden/quant2/tiny-llama-q-q4_1.gguf", "golden/quant2/tiny-llama-q-q4_1.json", 6e-2, false, true},
    {"q2_q5_1_fastdot_llamacpp", "golden/quant2/tiny-llama-q-q5_1.gguf", "golden/quant2/tiny-llama-q-q5_1.json", 6e-2, false, true},
    {"q2_q5_k_s_fastdot_llamacpp", "golden/quant2/tiny-llama-q-q5_k_s.gguf", "golden/quant2/tiny-llama-q-q5_k_s.json", 6e-2, false, true},
    {"q2_q5_k_m_fastdot_llamacpp", "golden/quant2/tiny-llama-q-q5_k_m.gguf", "golden/quant2/tiny-llama-q-q5_k_m.json", 6e-2, false, true},
    {"q2_iq4_nl_fastdot_llamacpp", "golden/quant2/tiny-llama-q-iq4_nl.gguf", "golden/quant2/tiny-llama-q-iq4_nl.json", 6e-2, false, true},
    {"q2_iq4_xs_fastdot_llamacpp", "golden/quant2/tiny-llama-q-iq4_xs.gguf", "golden/quant2/tiny-llama-q-iq4_xs.json", 6e-2, false, true},
    {"w192_f32_llamacpp", "golden/quant2/tiny-llama-w192-f32.gguf", "golden/quant2/tiny-llama-w192-f32.json", 1e-4, false},
    {"w192_q4_k_m_llamacpp", "golden/quant2/tiny-llama-w192-q4_k_m.gguf", "golden/quant2/tiny-llama-w192-q4_k_m.json", 6e-2, false},
    {"w192_q5_k_m_llamacpp", "golden/quant2/tiny-llama-w192-q5_k_m.gguf", "golden/quant2/tiny-llama-w192-q5_k_m.json", 6e-2, false},
    {"w192_q5_k_m_fastdot_llamacpp", "golden/quant2/tiny-llama-w192-q5_k_m.gguf", "golden/quant2/tiny-llama-w192-q5_k_m.json", 6e-2, false, true},
    // Architectures (../shared/golden/arch/README.md): llama with rope_freqs, phi3 (fused
    // qkv and gate|up), gemma3 and gemma2 (sliding windows, post norms, GeGLU, soft-capping).
    // This engine computes GELU exactly, so the Gemmas are held to the float64 reference (with
    // exact GELU) tightly and to llama.cpp (f16 GELU table) at the README's looser tolerances.
    {"arch_llama3", "golden/arch/tiny-llama3.gguf", "golden/arch/tiny-llama3.json", 1e-4, false},
    {"arch_phi3", "golden/arch/tiny-phi3.gguf", "golden/arch/tiny-phi3.json", 1e-4, false},
    {"arch_gemma3", "golden/arch/tiny-gemma3.gguf", "golden/arch/tiny-gemma3.ref64.json", 1e-5, false},
    {"arch_gemma3_llamacpp", "golden/arch/tiny-gemma3.gguf", "golden/arch/tiny-gemma3.json", 1e-3, false},
    {"arch_gemma2", "golden/arch/tiny-gemma2.gguf", "golden/arch/tiny-gemma2.ref64.json", 3e-4, false},
    {"arch_gemma2_llamacpp", "golden/arch/tiny-gemma2.gguf", "golden/arch/tiny-gemma2.json", 3e-2, false},
};

std::string Shared(const char* rel) { return std::string(SMARTGEN_SHARED_DIR) + "/" + rel; }

class GoldenTest : public ::testing::TestWithParam<GoldenCase> {
 protected:
  void SetUp() override {
    const GoldenCase& c = GetParam();
    kernels::SetFastDot(c.fast_dot);
    auto text = core::ReadFileToString(Shared(c.golden));
    ASSERT_TRUE(text.ok()) << text.status().ToString() << " (is ../shared present?)";
    golden_ = json::parse(*text);
    auto m = Model::Load(Shared(c.model));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(*m);
    pool_ = std::make_unique<core::ThreadPool>(2);
    forward_ = std::make_unique<Forward>(*model_, pool_.get());
    blocks_ = std::make_unique<kv::BlockPool>(forward_->KvGeometryFor(kv::KvDType::kF32, 16),
                                              1 << 16);
  }

  void TearDown() override { kernels::SetFastDot(false); }

  // Tolerance for a position whose logits are `logits`.
  double Tol(std::span<const float> logits) const {
    if (!GetParam().relative) return GetParam().tol;
    float max_abs = 0;
    for (float x : logits) max_abs = std::max(max_abs, std::abs(x));
    return GetParam().tol * std::max(1.0f, max_abs);
  }

  static double LogSumExp(std::span<const float> x) {
    const double m = *std::max_element(x.begin(), x.end());
    double s = 0;
    for (float v : x) s += std::exp(v - m);
    return m + std::log(s);
  }

  // Checks each [id, logit] pair of `top` against `logits`.
  void ExpectTop(std::span<const float> logits, const json& top, const std::string& where) {
    const double tol = Tol(logits);
    for (const auto& entry : top) {
      const int id = entry[0].get<int>();
      const double want = entry[1].get<double>();
      ASSERT_LT(id, static_cast<int>(logits.size()));
      EXPECT_NEAR(logits[id], want, tol) << where << " token " << id;
    }
  }

  json golden_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<core::ThreadPool> pool_;
  std::unique_ptr<Forward> forward_;
  std::unique_ptr<kv::BlockPool> blocks_;
};

TEST_P(GoldenTest, TokenizationMatches) {
  const bool add_bos = golden_["model"].value("add_bos", false);
  for (const json& p : golden_["prompts"]) {
    const std::string prompt = p["prompt"].get<std::string>();
    const std::vector<std::int32_t> want = p["tokens"].get<std::vector<std::int32_t>>();
    const std::vector<std::int32_t> got = model_->tokenizer().Encode(prompt, add_bos, false);
    EXPECT_EQ(got, want) << "prompt: " << prompt.substr(0, 60);
  }
}

TEST_P(GoldenTest, PromptLogitsAndLayer0KeysMatch) {
  const int n_vocab = model_->config().n_vocab;
  for (const json& p : golden_["prompts"]) {
    const std::vector<std::int32_t> tokens = p["tokens"].get<std::vector<std::int32_t>>();
    kv::SequenceKv seq(blocks_.get());
    std::vector<float> logits;
    ForwardChunk chunk;
    chunk.kv = &seq;
    chunk.tokens = tokens;
    chunk.all_logits = true;
    chunk.logits = &logits;
    ForwardChunk chunks[1] = {chunk};
    ASSERT_TRUE(forward_->Run(chunks).ok());
    ASSERT_EQ(logits.size(), tokens.size() * n_vocab);

    for (const json& pos : p["positions"]) {
      const int i = pos["pos"].get<int>();
      const std::span<const float> row(logits.data() + static_cast<std::size_t>(i) * n_vocab, n_vocab);
      ExpectTop(row, pos["top10"], "position " + std::to_string(i));
      EXPECT_NEAR(LogSumExp(row), pos["logsumexp"].get<double>(), Tol(row))
          << "logsumexp at position " << i;
    }
    const std::vector<double> last = p["last_logits"].get<std::vector<double>>();
    const std::span<const float> last_row(logits.data() + (tokens.size() - 1) * n_vocab, n_vocab);
    ASSERT_EQ(last.size(), static_cast<std::size_t>(n_vocab));
    double max_diff = 0;
    for (int t = 0; t < n_vocab; ++t) max_diff = std::max(max_diff, std::abs(last_row[t] - last[t]));
    EXPECT_LE(max_diff, Tol(last_row)) << "last-position logits";

    // Layer-0 keys after RoPE are what the KV cache holds: [kv_head][head_dim] per position.
    const ModelConfig& c = model_->config();
    for (const json& k : p["k_layer0"]) {
      if (k["op"] != "ROPE") continue;
      const auto& rows = k["positions"];
      for (std::size_t pos = 0; pos < rows.size(); ++pos) {
        const std::vector<double> want = rows[pos].get<std::vector<double>>();
        ASSERT_EQ(want.size(), static_cast<std::size_t>(c.kv_dim()));
        for (int h = 0; h < c.n_kv_heads; ++h) {
          const float* got = reinterpret_cast<const float*>(seq.KRow(0, h, static_cast<std::int64_t>(pos)));
          for (int d = 0; d < c.head_dim; ++d) {
            EXPECT_NEAR(got[d], want[h * c.head_dim + d], 10 * GetParam().tol + 1e-5)
                << "K layer 0, position " << pos << ", head " << h << ", dim " << d;
          }
        }
      }
    }
  }
}

TEST_P(GoldenTest, GreedyContinuationMatches) {
  const int n_vocab = model_->config().n_vocab;
  for (const json& p : golden_["prompts"]) {
    const std::vector<std::int32_t> prompt = p["tokens"].get<std::vector<std::int32_t>>();
    const json& greedy = p["greedy"];
    const std::vector<std::int32_t> want = greedy["tokens"].get<std::vector<std::int32_t>>();
    const json& steps = greedy["steps"];

    // Teacher-forced: step s's logits come from feeding golden tokens 0..s-1.
    kv::SequenceKv seq(blocks_.get());
    std::vector<float> logits;
    std::size_t free_running_ok = want.size();  // steps before the first close call
    for (std::size_t s = 0; s < want.size(); ++s) {
      ForwardChunk chunk;
      chunk.kv = &seq;
      chunk.tokens = s == 0 ? std::span<const std::int32_t>(prompt)
                            : std::span<const std::int32_t>(&want[s - 1], 1);
      chunk.logits = &logits;
      ForwardChunk chunks[1] = {chunk};
      ASSERT_TRUE(forward_->Run(chunks).ok());
      ASSERT_EQ(logits.size(), static_cast<std::size_t>(n_vocab));
      const json& top5 = steps[s]["top5"];
      ExpectTop(logits, top5, "greedy step " + std::to_string(s));
      const double gap = top5[0][1].get<double>() - top5[1][1].get<double>();
      if (gap > 4 * Tol(logits)) {
        EXPECT_EQ(Greedy(logits), want[s]) << "greedy step " << s << " (margin " << gap << ")";
      } else {
        free_running_ok = std::min(free_running_ok, s);
      }
    }

    // Free-running greedy generation reproduces the golden tokens up to the first close call.
    kv::SequenceKv fresh(blocks_.get());
    GenerateOptions g;
    g.max_tokens = static_cast<int>(want.size());
    g.stop_at_eog = false;
    auto out = Generate(*forward_, fresh, prompt, g);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->size(), want.size());
    for (std::size_t s = 0; s < free_running_ok; ++s) {
      ASSERT_EQ((*out)[s], want[s]) << "free-running step " << s;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, GoldenTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace smartgen::model
