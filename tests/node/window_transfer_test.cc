// Sliding-window-aware transfer through a whole deployment on a tiny Gemma 3 model (5 of every 6
// layers slide, window 32 tokens): every mode gives colocated's tokens with and without window
// awareness; window-aware, full and layerwise carry exactly the needed blocks (a sliding layer's
// window, every block of the global layer) and SmartGen no more than those, and no mode waits
// for a block it will never receive (no fallback, no local recompute).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "model/model.h"
#include "node/decode/decode_node.h"
#include "node/prefill/prefill_node.h"
#include "node/router/router.h"
#include "node_test_util.h"
#include "select/needed_blocks.h"

namespace smartgen::node {
namespace {

using nlohmann::json;

// tiny-gemma3 with f32 weights, written once.
std::string GemmaModelPath() {
  static const std::string path = [] {
    model::SyntheticModelSpec spec;
    spec.preset = *model::FindPreset("tiny-gemma3");
    spec.type = gguf::GgmlType::kF32;
    spec.seed = 31;
    spec.out = ::testing::TempDir() + "/node_test_tiny_gemma3.gguf";
    EXPECT_TRUE(model::WriteSyntheticModel(spec).ok());
    return spec.out;
  }();
  return path;
}

NodeConfig GemmaConfig(const std::string& name) {
  NodeConfig c = testing::SmallNodeConfig(name, 0);
  c.model_path = GemmaModelPath();
  return c;
}

std::vector<std::int32_t> GemmaPrompt(int n) {
  std::vector<std::int32_t> p(n);
  for (int i = 0; i < n; ++i) p[i] = 3 + (i * 37 + 11) % 250;
  return p;
}

class WindowDeployment : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = PrefillNode::Create(GemmaConfig("prefill"));
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    ASSERT_TRUE((*p)->Start().ok());
    prefill_ = std::move(*p);
    auto d = DecodeNode::Create(GemmaConfig("decode"));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    ASSERT_TRUE((*d)->Start().ok());
    decode_ = std::move(*d);
    RouterConfig rc;
    rc.model_path = GemmaModelPath();
    rc.prefill_nodes = {"127.0.0.1:" + std::to_string(prefill_->http_port())};
    rc.decode_nodes = {"127.0.0.1:" + std::to_string(decode_->http_port())};
    auto r = Router::Create(rc);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    router_ = std::move(*r);
    auto m = model::Model::Load(GemmaModelPath());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    config_ = (*m)->config();
  }

  Result<std::vector<std::int32_t>> Run(const std::string& mode,
                                        const std::vector<std::int32_t>& prompt, int max_tokens,
                                        const json& options, json* stats) {
    RouteRequest rq = testing::TestRequest(mode, prompt, max_tokens);
    rq.spec.options = options;
    std::vector<std::int32_t> out;
    auto r = testing::GenerateTokens(*router_, rq, &out);
    if (!r.ok()) return r.status();
    *stats = r->stats;
    return out;
  }

  std::unique_ptr<PrefillNode> prefill_;
  std::unique_ptr<DecodeNode> decode_;
  std::unique_ptr<Router> router_;
  model::ModelConfig config_;
};

constexpr double kBlockBytes = 16 * 32 * 4 * 2;  // B x head_dim x f32, K and V

TEST_F(WindowDeployment, EveryModeGivesColocatedTokensAndSendsOnlyTheWindows) {
  ASSERT_EQ(config_.arch, model::Arch::kGemma3);
  ASSERT_TRUE(config_.IsSlidingLayer(0));
  ASSERT_FALSE(config_.IsSlidingLayer(5));
  const int n = 300;  // 19 blocks; a sliding layer needs blocks 16..18 (positions 269..)
  const auto prompt = GemmaPrompt(n);
  const auto want = testing::ReferenceTokens(GemmaModelPath(), prompt, 16);
  ASSERT_EQ(want.size(), 16u);
  const select::NeededBlocks needed = select::PromptNeededBlocks(config_, 16, n, true);
  ASSERT_EQ(needed.FirstBlock(0), 16);
  const double needed_bytes = static_cast<double>(needed.Total()) * kBlockBytes;
  const double full_bytes = static_cast<double>(needed.grid.total()) * kBlockBytes;
  ASSERT_LT(needed_bytes, 0.5 * full_bytes);

  // SmartGen selecting every block and waiting for it: exact from the first step.
  const json exact_sg = {
      {"budget_fraction", 1.0}, {"proactive_ratio", 8.0}, {"wait_bound_ms", 1e6}};
  for (bool aware : {true, false}) {
    for (const char* mode : {"colocated", "full", "layerwise", "smartgen"}) {
      json options = std::string(mode) == "smartgen" ? exact_sg : json::object();
      if (!aware) options["window_aware"] = false;
      json stats;
      auto got = Run(mode, prompt, 16, options, &stats);
      ASSERT_TRUE(got.ok()) << mode << ": " << got.status().ToString();
      EXPECT_EQ(*got, want) << mode << (aware ? "" : " (window ignored)") << "\n" << stats.dump();
      EXPECT_FALSE(stats.value("fallback", true))
          << mode << ": waited for blocks that never come?\n"
          << stats.dump();
      EXPECT_FALSE(stats.value("recomputed_locally", false)) << mode << "\n" << stats.dump();
      if (std::string(mode) == "colocated") continue;
      // The KV of the blocks that never come went back to the decode node's pool.
      EXPECT_EQ(stats.value("kv_blocks_released", -1),
                aware ? needed.grid.total() - needed.Total() : 0)
          << mode << "\n"
          << stats.dump();
      const double received = stats["kv_bytes_received"].get<double>();
      const double want_bytes = aware ? needed_bytes : full_bytes;
      EXPECT_EQ(stats["prefill"]["stats"]["kv_bytes_needed"].get<double>(), want_bytes) << mode;
      if (std::string(mode) == "smartgen") {
        EXPECT_LE(received, want_bytes) << "SmartGen sent a block the decode does not need\n"
                                        << stats.dump();
        EXPECT_EQ(stats["blocks_needed"].get<double>() * kBlockBytes, want_bytes) << stats.dump();
      } else {
        EXPECT_EQ(received, want_bytes) << mode
                                        << (aware ? ": a sliding layer's blocks outside its window"
                                                  : ": window ignored, every block")
                                        << "\n"
                                        << stats.dump();
      }
    }
  }
}

// Choices fork a prompt KV whose blocks before the windows were given back: each choice's copy
// holds only the needed blocks, and every block is back in the pool afterwards.
TEST_F(WindowDeployment, ChoicesForkOnlyTheNeededBlocks) {
  const auto prompt = GemmaPrompt(300);
  const auto want = testing::ReferenceTokens(GemmaModelPath(), prompt, 8);
  const json exact_sg = {
      {"budget_fraction", 1.0}, {"proactive_ratio", 8.0}, {"wait_bound_ms", 1e6}};
  for (const char* mode : {"full", "smartgen", "colocated"}) {
    RouteRequest rq = testing::TestRequest(mode, prompt, 8);
    rq.spec.n = 2;
    if (std::string(mode) == "smartgen") rq.spec.options = exact_sg;
    std::vector<std::vector<std::int32_t>> got(2);
    auto r = router_->Generate(
        rq, Router::ChoiceSink([&](int c, std::int32_t t, const model::TokenLogprobs*) {
          got.at(static_cast<std::size_t>(c)).push_back(t);
          return true;
        }));
    ASSERT_TRUE(r.ok()) << mode << ": " << r.status().ToString();
    EXPECT_EQ(got[0], want) << mode;
    EXPECT_EQ(got[1], want) << mode;
  }
  const core::Deadline until = core::Deadline::After(core::Seconds(5));
  while (decode_->MetricsText().find("\nsmartgen_decode_kv_blocks_used 0\n") == std::string::npos &&
         !until.Expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(decode_->MetricsText().find("\nsmartgen_decode_kv_blocks_used 0\n"), std::string::npos)
      << decode_->MetricsText();
}

TEST_F(WindowDeployment, AutoWeighsTheNeededBytes) {
  const int n = 300;
  const auto prompt = GemmaPrompt(n);
  const auto want = testing::ReferenceTokens(GemmaModelPath(), prompt, 8);
  const select::NeededBlocks needed = select::PromptNeededBlocks(config_, 16, n, true);
  for (bool aware : {true, false}) {
    json stats;
    auto got = Run("auto", prompt, 8, aware ? json::object() : json{{"window_aware", false}}, &stats);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, want) << stats.dump();
    const double bytes = static_cast<double>(aware ? needed.Total() : needed.grid.total()) * kBlockBytes;
    EXPECT_EQ(stats["auto"]["kv_bytes"].get<double>(), bytes) << stats.dump();
  }
}

TEST_F(WindowDeployment, SmartgenWithDefaultsBecomesExactOnTheNeededBlocksOnly) {
  const int n = 400;
  const auto prompt = GemmaPrompt(n);
  const select::NeededBlocks needed = select::PromptNeededBlocks(config_, 16, n, true);
  json stats;
  // The default options (a sized proactive set, bounded waits, speculative stream) on an
  // unshaped link: the request becomes exact - every needed block present - and nothing else
  // crossed the link.
  auto got = Run("smartgen", prompt, 48, json{{"proactive_ratio", 4.0}}, &stats);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->size(), 48u);
  EXPECT_TRUE(stats.contains("time_to_exact_ms")) << stats.dump();
  EXPECT_EQ(stats["blocks_present"].get<double>(), static_cast<double>(needed.Total()))
      << stats.dump();
  EXPECT_LE(stats["kv_bytes_received"].get<double>(),
            static_cast<double>(needed.Total()) * kBlockBytes)
      << stats.dump();
  // The proactive set holds every sliding layer's window: 5 layers x 2 heads x 3..4 blocks.
  EXPECT_GE(stats["bytes_by_path"]["proactive"].get<double>(),
            static_cast<double>(needed.Total() - needed.InLayer(5)) * kBlockBytes)
      << stats.dump();
  // A bad option value is refused, naming it.
  auto bad = Run("full", prompt, 4, json{{"window_aware", 3}}, &stats);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("window_aware"), std::string::npos)
      << bad.status().ToString();
}

}  // namespace
}  // namespace smartgen::node
