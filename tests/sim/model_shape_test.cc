#include "sim/model_shape.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "model/synthetic_model.h"
#include "sim/cost_model.h"
#include "sim/hardware.h"

namespace smartgen::sim {
namespace {

TEST(ModelShape, Llama8BFiguresFromTheDesign) {
  auto s = ModelShapeByName("llama-3.1-8b");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  // DESIGN.md section 1: 128 KiB of KV per token; 48K tokens are 6 GiB.
  EXPECT_DOUBLE_EQ(s->KvBytes(1), 128 * 1024);
  EXPECT_NEAR(s->KvBytes(48 * 1024) / (1024.0 * 1024 * 1024), 6.0, 1e-9);
  // 8.03 B parameters, untied output.
  const double params = s->n_layers * s->LayerParams() + 2 * s->EmbeddingParams();
  EXPECT_NEAR(params / 1e9, 8.03, 0.01);
  EXPECT_EQ(s->n_sliding_layers(), 0);
}

TEST(ModelShape, SmolLm2FromTheModelPresets) {
  auto s = ModelShapeByName("smollm2-135m");
  ASSERT_TRUE(s.ok());
  // DESIGN.md section 11: 30 layers x 3 KV heads x 64 x 2 x 2 B per token; 4096 tokens 94 MB.
  EXPECT_DOUBLE_EQ(s->KvBytes(1), 30 * 3 * 64 * 2 * 2);
  EXPECT_NEAR(s->KvBytes(4096) / 1e6, 94.4, 0.1);
}

TEST(ModelShape, GemmaSlidingLayersHoldOnlyTheirWindow) {
  auto s = ModelShapeByName("gemma-3-12b");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->n_sliding_layers(), 40);  // 5 local : 1 global over 48 layers
  EXPECT_FALSE(s->Sliding(5));
  EXPECT_TRUE(s->Sliding(0));
  const double per_layer_token = 2.0 * 8 * 256 * 2;
  EXPECT_DOUBLE_EQ(s->KvBytes(60000), per_layer_token * (8 * 60000.0 + 40 * 1024.0));
  EXPECT_DOUBLE_EQ(s->KvBytes(512), per_layer_token * 48 * 512);
}

TEST(ModelShape, PresetSlidingWindowsFollowTheArchitecture) {
  auto s = ModelShapeByName("gemma3-1b");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->sliding_window, model::FindPreset("gemma3-1b")->sliding_window);
  EXPECT_EQ(s->n_sliding_layers(), 26 - 26 / 6);  // layers 5, 11, 17, 23 are global
}

TEST(ModelShape, PrefillAttentionFlopsCountEveryQueryKeyPair) {
  ModelShape s = *ModelShapeByName("gemma-3-12b");
  for (std::int64_t n : {1, 7, 1024, 1500}) {
    for (int layer : {0, 5}) {
      double pairs = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        pairs += s.Sliding(layer) ? std::min<std::int64_t>(i + 1, s.sliding_window) : i + 1;
      }
      EXPECT_DOUBLE_EQ(s.LayerPrefillAttentionFlops(layer, n), 4.0 * s.q_dim() * pairs)
          << n << " " << layer;
    }
  }
}

TEST(ModelShape, UnknownNamesListTheKnownOnes) {
  auto s = ModelShapeByName("no-such-model");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_NE(s.status().message().find("qwen3-14b"), std::string::npos);
}

TEST(ModelShape, FromGgufMetadataMatchesThePreset) {
  const model::ModelPreset* p = model::FindPreset("tiny-qwen3");
  ASSERT_NE(p, nullptr);
  model::SyntheticModelSpec spec;
  spec.preset = *p;
  spec.out = (std::filesystem::path(::testing::TempDir()) / "sim_tiny_qwen3.gguf").string();
  ASSERT_TRUE(model::WriteSyntheticModel(spec).ok());
  auto s = ModelShapeFromGguf(spec.out);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const ModelShape ref = FromModelPreset(*p);
  EXPECT_EQ(s->n_layers, ref.n_layers);
  EXPECT_EQ(s->n_embd, ref.n_embd);
  EXPECT_EQ(s->n_heads, ref.n_heads);
  EXPECT_EQ(s->n_kv_heads, ref.n_kv_heads);
  EXPECT_EQ(s->head_dim, ref.head_dim);
  EXPECT_EQ(s->n_ff, ref.n_ff);
  EXPECT_EQ(s->n_vocab, ref.n_vocab);
  EXPECT_DOUBLE_EQ(s->KvBytes(100), ref.KvBytes(100));
  // Weight bytes are the file's tensors: about 2 bytes per parameter for f16 matrices.
  EXPECT_GT(s->WeightBytes(), 0.9 * ref.WeightBytes());
  EXPECT_LT(s->WeightBytes(), 1.6 * ref.WeightBytes());
  EXPECT_FALSE(ModelShapeFromGguf(spec.out + ".missing").ok());
}

TEST(Hardware, PresetsCiteTheirSourceAndScaleWithDevices) {
  for (std::string_view name : HardwareNames()) {
    auto h = HardwareByName(name);
    ASSERT_TRUE(h.ok()) << name;
    EXPECT_FALSE(h->source.empty()) << name;
    EXPECT_GT(h->prefill_flops(), 0) << name;
    EXPECT_GT(h->decode_bytes_per_s(), 0) << name;
  }
  const Hardware l20 = *HardwareByName("l20");
  const Hardware x8 = l20.Scaled(8);
  EXPECT_DOUBLE_EQ(x8.prefill_flops(), 8 * l20.prefill_flops());
  EXPECT_DOUBLE_EQ(x8.memory_bytes, 8 * l20.memory_bytes);
  EXPECT_EQ(HardwareByName("tpu").status().code(), StatusCode::kNotFound);
}

TEST(Hardware, CpuCalibrationTakesBenchEngineRates) {
  const std::string path = (std::filesystem::path(::testing::TempDir()) / "engine.jsonl").string();
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("{\"n_prompt\": 512, \"prefill_gflops\": 270, \"decode_gbs\": 26}\n"
               "{\"n_prompt\": 4096, \"prefill_gflops\": 250, \"decode_gbs\": 28}\n", f);
    std::fclose(f);
  }
  auto h = CalibrateCpu(path);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_DOUBLE_EQ(h->prefill_flops(), 260e9);
  EXPECT_DOUBLE_EQ(h->decode_bytes_per_s(), 27e9);
  EXPECT_NE(h->source.find("engine.jsonl"), std::string::npos);
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fputs("{\"n_prompt\": 512}\n", f);
    std::fclose(f);
  }
  EXPECT_EQ(CalibrateCpu(path).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CalibrateCpu(path + ".missing").status().code(), StatusCode::kNotFound);
}

TEST(CostModel, DecodeIsMemoryBoundAndPrefillComputeBound) {
  const ModelShape s = *ModelShapeByName("llama-3.1-8b");
  const Hardware a100 = *HardwareByName("a100-80g");
  const CostModel c(a100, s);
  // One dense step at a short context streams the weights: bytes / effective bandwidth.
  const double weights = s.WeightBytes();
  const double floor = weights / a100.decode_bytes_per_s();
  EXPECT_GT(c.DecodeStep(1, 16), floor);
  EXPECT_LT(c.DecodeStep(1, 16), floor * 1.1);
  // A long prefill is FLOP-bound: FLOPs / effective FLOP/s, within the per-layer overheads.
  const double t = s.PrefillFlops(8192) / a100.prefill_flops();
  EXPECT_NEAR(c.Prefill(8192), t, 0.02 * t);
}

TEST(CostModel, PrefillAttentionRunsAtItsOwnRateWhereAPresetMeasuredOne) {
  const ModelShape s = *ModelShapeByName("qwen3-14b");
  const Hardware h200 = *HardwareByName("h200");
  ASSERT_GT(h200.attention_compute_eff, 0);
  ASSERT_NE(h200.attention_compute_eff, h200.compute_eff);
  EXPECT_NE(h200.source.find("measured on an H200"), std::string::npos);
  const CostModel c(h200, s);
  const std::int64_t n = 32768;
  const double linear = s.LayerLinearFlopsPerToken() * n / h200.prefill_flops();
  const double attention = s.LayerPrefillAttentionFlops(0, n) / h200.prefill_attention_flops();
  EXPECT_NEAR(c.PrefillLayer(0, n), linear + attention + h200.layer_overhead_s, 1e-9);
  // The K/V rows are ready after the QKV projection: a share of the layer's time.
  EXPECT_GT(c.PrefillLayerKvReady(0, n), 0);
  EXPECT_LT(c.PrefillLayerKvReady(0, n), linear);
  // A preset without its own attention rate runs attention at the GEMMs'.
  const Hardware l20 = *HardwareByName("l20");
  EXPECT_EQ(l20.attention_compute_eff, 0);
  EXPECT_DOUBLE_EQ(l20.prefill_attention_flops(), l20.prefill_flops());
}

}  // namespace
}  // namespace smartgen::sim
