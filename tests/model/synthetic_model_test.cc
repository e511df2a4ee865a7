// The synthetic models behind `smartgen make-model`: type names, the Q4_K_M recipe, and that
// every quantized file loads and runs.
#include "model/synthetic_model.h"

#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "gguf/gguf_reader.h"
#include "model/forward.h"
#include "model/model.h"

namespace smartgen::model {
namespace {

using gguf::GgmlType;

std::string Write(const char* preset, const char* type) {
  SyntheticModelSpec spec;
  spec.preset = *FindPreset(preset);
  EXPECT_TRUE(ParseSyntheticType(type, &spec)) << type;
  spec.seed = 3;
  spec.out = ::testing::TempDir() + "/synthetic_" + preset + "_" + type + ".gguf";
  const Status s = WriteSyntheticModel(spec);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return spec.out;
}

GgmlType TypeOf(const gguf::GgufFile& f, const std::string& name) {
  const gguf::TensorInfo* t = f.FindTensor(name);
  EXPECT_NE(t, nullptr) << name;
  return t != nullptr ? t->type : GgmlType::kF32;
}

TEST(SyntheticModel, TypeNamesParseAndUnknownOnesDoNot) {
  SyntheticModelSpec spec;
  for (const char* name : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k",
                           "q3_k", "q4_k", "q5_k", "q6_k", "iq4_nl", "iq4_xs"}) {
    EXPECT_TRUE(ParseSyntheticType(name, &spec)) << name;
    EXPECT_FALSE(spec.q4_k_m);
    EXPECT_EQ(spec.recipe, QuantRecipe::kNone);
  }
  EXPECT_TRUE(ParseSyntheticType("q4_k_m", &spec));
  EXPECT_TRUE(spec.q4_k_m);
  EXPECT_EQ(spec.type, GgmlType::kQ4_K);
  EXPECT_TRUE(ParseSyntheticType("Q5_K_M", &spec));
  EXPECT_EQ(spec.recipe, QuantRecipe::kQ5_K_M);
  EXPECT_TRUE(ParseSyntheticType("q3_k_m", &spec));
  EXPECT_EQ(spec.recipe, QuantRecipe::kQ3_K_M);
  EXPECT_FALSE(ParseSyntheticType("q8_k", &spec));  // a GGUF type, but not a weight type
  EXPECT_FALSE(ParseSyntheticType("q4", &spec));
}

TEST(SyntheticModel, AMissingOutputDirectoryIsReportedBeforeAnyWork) {
  SyntheticModelSpec spec;
  spec.preset = *FindPreset("tiny");
  ASSERT_TRUE(ParseSyntheticType("f16", &spec));
  spec.out = ::testing::TempDir() + "/no_such_dir_for_make_model/m.gguf";
  const Status s = WriteSyntheticModel(spec);
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
  EXPECT_NE(s.ToString().find("no_such_dir_for_make_model"), std::string::npos) << s.ToString();
  // An existing directory is written into as before.
  spec.out = ::testing::TempDir() + "/synthetic_tiny_dir_ok.gguf";
  EXPECT_TRUE(WriteSyntheticModel(spec).ok());
}

TEST(SyntheticModel, Q4KMFollowsLlamaCppsRecipe) {
  // "small": 4 layers, 256-wide rows, tied output. use_more_bits() picks layers 2 and 3.
  auto f = gguf::GgufFile::Open(Write("small", "q4_k_m"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(TypeOf(*f, "token_embd.weight"), GgmlType::kQ6_K);  // tied: it is the output
  for (int l = 0; l < 4; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const GgmlType more = l >= 2 ? GgmlType::kQ6_K : GgmlType::kQ4_K;
    EXPECT_EQ(TypeOf(*f, b + "attn_v.weight"), more) << l;
    EXPECT_EQ(TypeOf(*f, b + "ffn_down.weight"), more) << l;
    EXPECT_EQ(TypeOf(*f, b + "attn_q.weight"), GgmlType::kQ4_K) << l;
    EXPECT_EQ(TypeOf(*f, b + "ffn_up.weight"), GgmlType::kQ4_K) << l;
  }
  // "tiny": 64-wide rows do not split into 256-wide super-blocks: Q5_0 and Q8_0 instead.
  auto t = gguf::GgufFile::Open(Write("tiny", "q4_k_m"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(TypeOf(*t, "output.weight"), GgmlType::kQ8_0);
  EXPECT_EQ(TypeOf(*t, "token_embd.weight"), GgmlType::kQ5_0);
  EXPECT_EQ(TypeOf(*t, "blk.0.attn_k.weight"), GgmlType::kQ5_0);
  EXPECT_EQ(TypeOf(*t, "blk.1.ffn_down.weight"), GgmlType::kQ8_0);
}

// The recipes give every matrix the type llama-quantize gave it in the golden files (2 layers,
// 256-wide rows untied, and 192-wide rows tied, where the fallbacks apply).
TEST(QuantRecipe, MatchesTheFilesLlamaQuantizeWrote) {
  const std::string dir = std::string(SMARTGEN_SHARED_DIR) + "/golden/";
  struct File {
    const char* path;
    QuantRecipe recipe;
  };
  for (const File& f : {File{"quant/tiny-llama-q-q4_k_m.gguf", QuantRecipe::kQ4_K_M},
                        File{"quant2/tiny-llama-q-q3_k_m.gguf", QuantRecipe::kQ3_K_M},
                        File{"quant2/tiny-llama-q-q5_k_m.gguf", QuantRecipe::kQ5_K_M},
                        File{"quant2/tiny-llama-w192-q4_k_m.gguf", QuantRecipe::kQ4_K_M},
                        File{"quant2/tiny-llama-w192-q5_k_m.gguf", QuantRecipe::kQ5_K_M}}) {
    auto g = gguf::GgufFile::Open(dir + f.path);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    const bool tied = g->FindTensor("output.weight") == nullptr;
    int checked = 0;
    for (const gguf::TensorInfo& t : g->tensors()) {
      if (t.ne.size() != 2) continue;
      EXPECT_EQ(RecipeTensorType(f.recipe, GgmlType::kF32, t.name, 2, t.ne[0], tied), t.type)
          << f.path << " " << t.name;
      ++checked;
    }
    EXPECT_GE(checked, 15) << f.path;
  }
}

TEST(SyntheticModel, EveryQuantizedTypeLoadsAndGivesFiniteLogits) {
  core::ThreadPool pool(2);
  for (const char* type : {"q8_0", "q4_0", "q4_k", "q6_k", "q4_k_m", "q4_1", "q5_0", "q5_1",
                           "q2_k", "q3_k", "q5_k", "iq4_nl", "iq4_xs", "q3_k_m", "q5_k_m"}) {
    auto m = Model::Load(Write("small", type));
    ASSERT_TRUE(m.ok()) << type << ": " << m.status().ToString();
    Forward forward(**m, &pool);
    kv::BlockPool blocks(forward.KvGeometryFor(kv::KvDType::kF32, 16), 64);
    kv::SequenceKv seq(&blocks);
    std::vector<std::int32_t> tokens = {3, 40, 77, 120, 9};
    std::vector<float> logits;
    ASSERT_TRUE(forward.RunOne(&seq, tokens, &logits).ok()) << type;
    ASSERT_EQ(logits.size(), std::size_t(FindPreset("small")->n_vocab)) << type;
    for (float v : logits) ASSERT_TRUE(std::isfinite(v)) << type;
  }
}

}  // namespace
}  // namespace smartgen::model

namespace smartgen::model {
namespace {

// The phi3 / gemma presets write files the loader reads with the architecture's features, and
// the forward pass agrees with itself between a batched prefill and token-by-token decode
// across the sliding window (prompt 3x the window of tiny-gemma's local layers).
TEST(SyntheticModel, ArchitecturePresetsLoadAndPrefillEqualsDecode) {
  core::ThreadPool pool(2);
  for (const char* preset : {"tiny-phi3", "tiny-gemma2", "tiny-gemma3"}) {
    auto m = Model::Load(Write(preset, "f32"));
    ASSERT_TRUE(m.ok()) << preset << ": " << m.status().ToString();
    const ModelConfig& c = (*m)->config();
    const ModelPreset& p = *FindPreset(preset);
    EXPECT_EQ(c.arch_name, p.arch);
    for (int l = 0; l < c.n_layers; ++l) {
      const bool sliding = (p.arch == "gemma2" && l % 2 == 0) || (p.arch == "gemma3" && l % 6 < 5);
      EXPECT_EQ(c.IsSlidingLayer(l), sliding) << preset << " layer " << l;
      EXPECT_EQ(c.LayerWindow(l), sliding ? p.sliding_window : 0) << preset << " layer " << l;
    }
    Forward forward(**m, &pool);
    kv::BlockPool blocks(forward.KvGeometryFor(kv::KvDType::kF32, 16), 256);
    std::vector<std::int32_t> tokens;
    for (int i = 0; i < 100; ++i) tokens.push_back((i * 37 + 11) % 300);
    kv::SequenceKv batch(&blocks);
    std::vector<float> want;
    ASSERT_TRUE(forward.RunOne(&batch, tokens, &want).ok()) << preset;
    kv::SequenceKv steps(&blocks);
    std::vector<float> got;
    ASSERT_TRUE(forward.RunOne(&steps, std::span(tokens).first(10), &got).ok());
    for (std::size_t i = 10; i < tokens.size(); ++i) {
      ASSERT_TRUE(forward.RunOne(&steps, std::span(tokens).subspan(i, 1), &got).ok());
    }
    ASSERT_EQ(got.size(), want.size());
    float max_diff = 0.0f, max_abs = 0.0f;
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(std::isfinite(got[i])) << preset;
      max_diff = std::max(max_diff, std::fabs(got[i] - want[i]));
      max_abs = std::max(max_abs, std::fabs(want[i]));
    }
    EXPECT_LT(max_diff, 1e-4f * std::max(1.0f, max_abs)) << preset;
    EXPECT_GT(max_abs, 0.0f) << preset;
  }
}

}  // namespace
}  // namespace smartgen::model

namespace smartgen::model {
namespace {

// A single K-quant type on rows that are not 256 wide is refused up front with the reason;
// the recipe of the same family falls back instead (as llama-quantize does).
TEST(SyntheticModel, KQuantOnNarrowRowsIsAClearErrorAndTheRecipeFallsBack) {
  SyntheticModelSpec spec;
  spec.preset = *FindPreset("tiny");  // 64-wide rows
  ASSERT_TRUE(ParseSyntheticType("q5_k", &spec));
  spec.out = ::testing::TempDir() + "/synthetic_tiny_q5_k.gguf";
  const Status s = WriteSyntheticModel(spec);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("256"), std::string::npos) << s.ToString();
  auto f = gguf::GgufFile::Open(Write("tiny", "q5_k_m"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(TypeOf(*f, "blk.0.attn_q.weight"), GgmlType::kQ5_1);
  EXPECT_EQ(TypeOf(*f, "output.weight"), GgmlType::kQ8_0);
}

}  // namespace
}  // namespace smartgen::model
