// ReadModelConfig: the metadata of each supported architecture, range validation of malformed
// files (written by GgufWriter), and the per-layer sliding-window and RoPE settings.
#include "model/model_config.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gguf/gguf_writer.h"

namespace smartgen::model {
namespace {

// Metadata to write: keys set by a test first, then the defaults it did not set (the reader
// rejects duplicate keys).
class Meta {
 public:
  void U32(const std::string& key, std::uint32_t v) {
    Put(key, [key, v](gguf::GgufWriter& w) { w.AddUint32(key, v); });
  }
  void F32(const std::string& key, float v) {
    Put(key, [key, v](gguf::GgufWriter& w) { w.AddFloat32(key, v); });
  }
  void Str(const std::string& key, const std::string& v) {
    Put(key, [key, v](gguf::GgufWriter& w) { w.AddString(key, v); });
  }
  void WriteTo(gguf::GgufWriter& w) const {
    for (const auto& [key, put] : entries_) put(w);
  }

 private:
  void Put(const std::string& key, std::function<void(gguf::GgufWriter&)> put) {
    for (const auto& e : entries_) {
      if (e.first == key) return;  // the first setting wins
    }
    entries_.emplace_back(key, std::move(put));
  }
  std::vector<std::pair<std::string, std::function<void(gguf::GgufWriter&)>>> entries_;
};

// A minimal `arch` model's metadata (n_layers layers, n_embd 64, 4 heads / 2 KV heads) plus the
// token_embd tensor ReadModelConfig needs; `edit` sets or overrides keys.
Result<ModelConfig> ReadConfig(const std::string& arch,
                               const std::function<void(Meta&)>& edit = {}, int n_layers = 2,
                               const std::string& extra_tensor = "",
                               std::vector<float> extra_values = {}) {
  Meta m;
  m.Str("general.architecture", arch);
  if (edit) edit(m);
  const std::string p = arch + ".";
  m.U32(p + "block_count", static_cast<std::uint32_t>(n_layers));
  m.U32(p + "embedding_length", 64);
  m.U32(p + "attention.head_count", 4);
  m.U32(p + "attention.head_count_kv", 2);
  m.U32(p + "feed_forward_length", 128);
  m.U32(p + "context_length", 4096);
  m.F32(p + "attention.layer_norm_rms_epsilon", 1e-5f);
  gguf::GgufWriter w;
  m.WriteTo(w);
  std::vector<float> embd(64 * 32, 0.0f);
  const std::int64_t ne[] = {64, 32};
  EXPECT_TRUE(w.AddTensor("token_embd.weight", ne, gguf::GgmlType::kF32,
                          std::as_bytes(std::span(embd))).ok());
  if (!extra_tensor.empty()) {
    const std::int64_t ne1[] = {static_cast<std::int64_t>(extra_values.size())};
    EXPECT_TRUE(w.AddTensor(extra_tensor, ne1, gguf::GgmlType::kF32,
                            std::as_bytes(std::span(extra_values))).ok());
  }
  const std::string path = ::testing::TempDir() + "config_" + arch + ".gguf";
  SG_RETURN_IF_ERROR(w.WriteFile(path));
  SG_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::Open(path));
  return ReadModelConfig(file);
}

TEST(ModelConfig, AWellFormedLlamaIsGlobalEverywhere) {
  auto c = ReadConfig("llama");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->n_layers, 2);
  EXPECT_EQ(c->head_dim, 16);
  ASSERT_EQ(c->layers.size(), 2u);
  for (int l = 0; l < 2; ++l) {
    EXPECT_FALSE(c->IsSlidingLayer(l));
    EXPECT_EQ(c->LayerWindow(l), 0);
    EXPECT_EQ(c->LayerRope(l).freq_base, 10000.0f);
  }
  const kernels::AttentionParams p = c->LayerAttention(0, kernels::KvDType::kF16);
  EXPECT_FLOAT_EQ(p.scale, 0.25f);
  EXPECT_EQ(p.window, 0);
  EXPECT_EQ(p.softcap, 0.0f);
}

struct Malformed {
  const char* what;
  std::function<void(Meta&)> edit;
  const char* key;  // named in the error
};

TEST(ModelConfig, OutOfRangeMetadataIsAClearError) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Malformed cases[] = {
      {"NaN epsilon", [&](Meta& w) { w.F32("llama.attention.layer_norm_rms_epsilon", nan); },
       "layer_norm_rms_epsilon"},
      {"zero epsilon", [](Meta& w) { w.F32("llama.attention.layer_norm_rms_epsilon", 0.0f); },
       "layer_norm_rms_epsilon"},
      {"negative epsilon",
       [](Meta& w) { w.F32("llama.attention.layer_norm_rms_epsilon", -1e-5f); },
       "layer_norm_rms_epsilon"},
      {"context 2^32 - 1", [](Meta& w) { w.U32("llama.context_length", 0xFFFFFFFFu); },
       "context_length"},
      {"context 0", [](Meta& w) { w.U32("llama.context_length", 0); }, "context_length"},
      {"more KV heads than heads", [](Meta& w) { w.U32("llama.attention.head_count_kv", 8); },
       "head_count_kv"},
      {"zero heads", [](Meta& w) { w.U32("llama.attention.head_count", 0); }, "head_count"},
      {"infinite rope base", [&](Meta& w) { w.F32("llama.rope.freq_base", inf); },
       "rope.freq_base"},
      {"negative rope base", [](Meta& w) { w.F32("llama.rope.freq_base", -10000.0f); },
       "rope.freq_base"},
      {"NaN linear rope factor",
       [&](Meta& w) {
         w.Str("llama.rope.scaling.type", "linear");
         w.F32("llama.rope.scaling.factor", nan);
       },
       "rope.scaling.factor"},
      {"layers 2^31", [](Meta& w) { w.U32("llama.block_count", 0x80000000u); }, "block_count"},
  };
  for (const Malformed& m : cases) {
    auto c = ReadConfig("llama", m.edit);
    ASSERT_FALSE(c.ok()) << m.what;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << m.what << ": " << c.status().ToString();
    EXPECT_NE(c.status().message().find(m.key), std::string::npos)
        << m.what << ": " << c.status().ToString();
  }
}

TEST(ModelConfig, GemmaSoftCapsNanIsRejected) {
  auto c = ReadConfig("gemma2", [](Meta& w) {
    w.F32("gemma2.attn_logit_softcapping", std::numeric_limits<float>::quiet_NaN());
  });
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("attn_logit_softcapping"), std::string::npos);
}

TEST(ModelConfig, YarnAndUnknownArchitecturesAreUnimplemented) {
  auto yarn = ReadConfig("llama", [](Meta& w) { w.Str("llama.rope.scaling.type", "yarn"); });
  ASSERT_FALSE(yarn.ok());
  EXPECT_EQ(yarn.status().code(), StatusCode::kUnimplemented);
  auto arch = ReadConfig("mamba");
  ASSERT_FALSE(arch.ok());
  EXPECT_EQ(arch.status().code(), StatusCode::kUnimplemented);
}

TEST(ModelConfig, Gemma3HasFiveLocalLayersPerGlobalOneWithTheirOwnRope) {
  auto c = ReadConfig(
      "gemma3",
      [](Meta& w) {
        w.U32("gemma3.attention.sliding_window", 512);
        w.F32("gemma3.rope.freq_base", 1e6f);
        w.F32("gemma3.rope.freq_base_swa", 1e4f);
        w.Str("gemma3.rope.scaling.type", "linear");
        w.F32("gemma3.rope.scaling.factor", 8.0f);
      },
      /*n_layers=*/12);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (int l = 0; l < 12; ++l) {
    const bool global = l % 6 == 5;
    EXPECT_EQ(c->IsSlidingLayer(l), !global) << l;
    EXPECT_EQ(c->LayerWindow(l), global ? 0 : 512) << l;
    EXPECT_EQ(c->LayerRope(l).freq_base, global ? 1e6f : 1e4f) << l;
    EXPECT_EQ(c->LayerRope(l).freq_scale, global ? 0.125f : 1.0f) << l;
    EXPECT_EQ(c->LayerAttention(l, kernels::KvDType::kF32).window, global ? 0 : 512) << l;
    EXPECT_EQ(c->LayerKvStart(l, 2000), global ? 0 : 2000 - 511) << l;
    EXPECT_EQ(c->LayerKvStart(l, 100), 0) << l;
  }
  EXPECT_TRUE(c->has_qk_norm);
  EXPECT_TRUE(c->post_norms);
  EXPECT_FLOAT_EQ(c->embd_scale, 8.0f);
  EXPECT_EQ(c->final_softcap, 0.0f);
}

TEST(ModelConfig, Gemma2AlternatesLocalLayersAndSoftCaps) {
  auto c = ReadConfig("gemma2", {}, /*n_layers=*/4);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (int l = 0; l < 4; ++l) EXPECT_EQ(c->IsSlidingLayer(l), l % 2 == 0) << l;
  EXPECT_EQ(c->LayerWindow(0), 4096);  // llama.cpp's default for Gemma 2
  EXPECT_EQ(c->attn_softcap, 50.0f);
  EXPECT_EQ(c->final_softcap, 30.0f);
  EXPECT_EQ(c->LayerAttention(1, kernels::KvDType::kF32).softcap, 50.0f);
}

TEST(ModelConfig, AnExplicitPatternPeriodChoosesTheLocalLayers) {
  auto c = ReadConfig("gemma3", [](Meta& w) {
    w.U32("gemma3.attention.sliding_window", 64);
    w.U32("gemma3.attention.sliding_window_pattern", 2);
  }, 4);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (int l = 0; l < 4; ++l) EXPECT_EQ(c->IsSlidingLayer(l), l % 2 == 0) << l;
}

}  // namespace
}  // namespace smartgen::model

namespace smartgen::model {
namespace {

TEST(ModelConfig, RopeFreqsBecomeTheFactorsOfEveryLayer) {
  const std::vector<float> f = {1, 1, 1, 1, 3.25f, 32, 32, 32};  // head_dim 16: 8 pairs
  auto c = ReadConfig("llama", {}, 2, "rope_freqs.weight", f);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_NE(c->rope_freq_factors, nullptr);
  EXPECT_EQ(*c->rope_freq_factors, f);
  for (int l = 0; l < 2; ++l) {
    ASSERT_NE(c->LayerRope(l).freq_factors, nullptr);
    EXPECT_EQ(c->LayerRope(l).freq_factors[4], 3.25f);
  }
  // A copy of the config keeps the factors alive.
  const ModelConfig copy = *c;
  c = InvalidArgument("gone");
  EXPECT_EQ(copy.LayerRope(1).freq_factors[7], 32.0f);
}

TEST(ModelConfig, MalformedRopeFreqsAndLongRopeAreRejected) {
  auto nan = ReadConfig("llama", {}, 2, "rope_freqs.weight",
                        {1, 1, 1, std::numeric_limits<float>::quiet_NaN(), 1, 1, 1, 1});
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.status().message().find("rope_freqs"), std::string::npos);
  auto shape = ReadConfig("llama", {}, 2, "rope_freqs.weight", {1, 1, 1});
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.status().message().find("expected [8]"), std::string::npos);
  auto longrope = ReadConfig("phi3", {}, 2, "rope_factors_long.weight", std::vector<float>(8, 1));
  ASSERT_FALSE(longrope.ok());
  EXPECT_EQ(longrope.status().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace smartgen::model
