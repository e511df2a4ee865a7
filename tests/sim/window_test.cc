// Sliding-window layers in the simulator: the bytes every mode moves for a windowed model are
// the needed blocks the nodes' own rule gives (select/needed_blocks.h on the config the nodes
// read from the GGUF), and SmartGen selects over the other layers only.
#include <gtest/gtest.h>

#include <filesystem>

#include "gguf/gguf_reader.h"
#include "kv/kv_geometry.h"
#include "model/model_config.h"
#include "model/synthetic_model.h"
#include "select/needed_blocks.h"
#include "sim/cluster.h"
#include "sim/model_shape.h"
#include "sim_test_util.h"

namespace smartgen::sim {
namespace {

using testing::OnePairSpec;
using testing::RunOne;

constexpr std::int64_t kWindowedPrompt =
    200;  // 13 blocks of 16; a 32-token window needs blocks 10-12

// tiny-gemma3 (6 layers, 5 of them sliding with a 32-token window) written as a GGUF, and the
// config the nodes read from it.
struct WindowedModel {
  std::string path;
  model::ModelConfig config;
  ModelShape shape;
};

WindowedModel WriteWindowedModel(const char* preset) {
  WindowedModel m;
  model::SyntheticModelSpec spec;
  spec.preset = *model::FindPreset(preset);
  m.path = (std::filesystem::path(::testing::TempDir()) / (std::string("sim_") + preset + ".gguf"))
               .string();
  spec.out = m.path;
  EXPECT_TRUE(model::WriteSyntheticModel(spec).ok());
  auto file = gguf::GgufFile::Open(m.path);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  auto config = model::ReadModelConfig(*file);
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  m.config = *config;
  auto shape = ModelShapeFromGguf(m.path);
  EXPECT_TRUE(shape.ok()) << shape.status().ToString();
  m.shape = *shape;
  return m;
}

double WindowedBlockBytes(const model::ModelConfig& c) {
  kv::KvGeometry g;
  g.n_layers = c.n_layers;
  g.n_kv_heads = c.n_kv_heads;
  g.head_dim = c.head_dim;
  g.block_tokens = 16;
  return static_cast<double>(g.block_bytes());
}

TEST(SimWindows, ShapeSlidesTheLayersTheNodesConfigSlides) {
  for (const char* preset : {"tiny-gemma3", "tiny-gemma2"}) {
    const WindowedModel m = WriteWindowedModel(preset);
    const model::ModelConfig c = m.shape.AttentionConfig();
    ASSERT_EQ(c.n_layers, m.config.n_layers) << preset;
    for (int l = 0; l < c.n_layers; ++l) {
      EXPECT_EQ(c.IsSlidingLayer(l), m.config.IsSlidingLayer(l)) << preset << " layer " << l;
      EXPECT_EQ(c.LayerWindow(l), m.config.LayerWindow(l)) << preset << " layer " << l;
    }
  }
}

TEST(SimWindows, FullAndLayerwiseBytesAreTheNeededBlocks) {
  const WindowedModel m = WriteWindowedModel("tiny-gemma3");
  const double bb = WindowedBlockBytes(m.config);
  for (bool aware : {true, false}) {
    const select::NeededBlocks needed =
        select::PromptNeededBlocks(m.config, 16, kWindowedPrompt, aware);
    if (aware) {
      ASSERT_TRUE(needed.AnyWindowLayer());
      ASSERT_LT(needed.Total(), needed.grid.total());  // the windows leave blocks out
    } else {
      ASSERT_EQ(needed.Total(), needed.grid.total());
    }
    for (Mode mode : {Mode::kFull, Mode::kLayerwise}) {
      ClusterSpec spec = OnePairSpec(mode, 0.1);
      spec.model = m.shape;
      spec.options.smartgen.window_aware = aware;
      const SimResult res = RunOne(spec, kWindowedPrompt, 3);
      const SimRequest& r = *res.requests[0];
      const Path path = mode == Mode::kFull ? Path::kFull : Path::kLayerwise;
      EXPECT_DOUBLE_EQ(r.bytes[static_cast<int>(path)], static_cast<double>(needed.Total()) * bb)
          << ModeName(mode) << " window_aware " << aware;
      EXPECT_DOUBLE_EQ(r.full_kv_bytes, static_cast<double>(needed.grid.total()) * bb);
      EXPECT_GE(r.exact, 0);
    }
  }
}

TEST(SimWindows, SmartgenPushesTheWindowsAndSelectsOverTheGlobalLayers) {
  const WindowedModel m = WriteWindowedModel("tiny-gemma3");
  const double bb = WindowedBlockBytes(m.config);
  const select::NeededBlocks needed =
      select::PromptNeededBlocks(m.config, 16, kWindowedPrompt, true);
  int n_window = 0;
  double window_bytes = 0;
  for (int l = 0; l < m.config.n_layers; ++l) {
    if (!needed.IsWindowLayer(l)) continue;
    ++n_window;
    window_bytes += static_cast<double>(needed.InLayer(l)) * bb;
  }
  ASSERT_EQ(n_window, 5);
  // A slow link (125 kB/s: the windows take 0.5 s) and a decode node slow enough (1 MB/s of
  // memory bandwidth) that the request outlives the transfer: nothing is cancelled.
  ClusterSpec spec = OnePairSpec(Mode::kSmartgen, 0.001);
  spec.model = m.shape;
  spec.decode_hw.mem_bytes_per_s = 1e6;
  const SimResult res = RunOne(spec, kWindowedPrompt, 40);
  const SimRequest& r = *res.requests[0];
  ASSERT_NE(r.kv, nullptr);
  EXPECT_EQ(r.kv->n_layers(), m.config.n_layers - n_window);  // selective: the global layer
  for (int l = 0; l < m.config.n_layers; ++l)
    EXPECT_EQ(r.kv->selective(l), !needed.IsWindowLayer(l)) << l;
  // The windows go whole with the proactive set, whatever its budget; exactness needs no more
  // than the needed blocks.
  EXPECT_GE(r.bytes[static_cast<int>(Path::kProactive)], window_bytes);
  double sent = 0;
  for (int p = 0; p < static_cast<int>(Path::kCount); ++p) {
    if (p != static_cast<int>(Path::kSummary) && p != static_cast<int>(Path::kControl))
      sent += r.bytes[p];
  }
  // (A block fetched on demand while the stream carries it crosses twice.)
  EXPECT_LE(sent, (static_cast<double>(needed.Total()) + r.kv->duplicate_blocks()) * bb + 1e-6);
  EXPECT_GE(r.exact, 0);
  EXPECT_DOUBLE_EQ(r.cancelled_bytes, 0);
  // Ignoring the windows, every layer selects and has summaries.
  spec.options.smartgen.window_aware = false;
  const SimResult all = RunOne(spec, kWindowedPrompt, 40);
  EXPECT_EQ(all.requests[0]->kv->n_layers(), m.config.n_layers);
  EXPECT_GT(all.requests[0]->bytes[static_cast<int>(Path::kSummary)],
            r.bytes[static_cast<int>(Path::kSummary)]);
}

TEST(SimWindows, Gemma3At32kTokensMovesOnlyTheWindowsOfItsLocalLayers) {
  ClusterSpec spec = OnePairSpec(Mode::kLayerwise, 25);
  spec.model = *ModelShapeByName("gemma-3-12b");
  const std::int64_t n = 32768;
  const SimResult aware = RunOne(spec, n, 2);
  spec.options.smartgen.window_aware = false;
  const SimResult ignored = RunOne(spec, n, 2);
  const double per_block = 2.0 * 256 * 2 * 16;  // K and V, head_dim 256, f16, 16 tokens
  // 8 global layers x 8 KV heads x 2048 blocks; 40 local layers x 8 heads x the 64 blocks
  // 1984.. that hold keys 31745.. (the window of position 32768).
  const double needed = (8.0 * 8 * 2048 + 40.0 * 8 * 64) * per_block;
  EXPECT_DOUBLE_EQ(aware.requests[0]->bytes[static_cast<int>(Path::kLayerwise)], needed);
  EXPECT_DOUBLE_EQ(ignored.requests[0]->bytes[static_cast<int>(Path::kLayerwise)],
                   48.0 * 8 * 2048 * per_block);
}

TEST(SimWindows, ModeLabelsCarryTheWindowAblation) {
  auto a = ParseModeLabel("layerwise:nowindow");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->mode, Mode::kLayerwise);
  EXPECT_FALSE(a->window_aware);
  EXPECT_EQ(ModeLabelName(*a), "layerwise:nowindow");
  EXPECT_TRUE(ParseModeLabel("full")->window_aware);
  EXPECT_FALSE(ParseModeLabel("full:int9").ok());
  auto o = ParseSmartgenSimOptions(nlohmann::json::parse(R"({"window_aware": false})"));
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->window_aware);
  EXPECT_FALSE(ParseSmartgenSimOptions(nlohmann::json::parse(R"({"window_aware": 1})")).ok());
}

}  // namespace
}  // namespace smartgen::sim
