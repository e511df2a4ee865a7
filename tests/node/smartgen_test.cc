// SmartGen mode through a whole in-process deployment over loopback TCP: selecting every block
// reproduces layer-wise output exactly; small budgets complete with consistent accounting; a
// link that dies mid-transfer is survived by recomputing the missing KV.
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "kv/block_pool.h"
#include "model/generate.h"
#include "model/synthetic_model.h"
#include "node/decode/decode_node.h"
#include "node/prefill/prefill_node.h"
#include "node/router/router.h"
#include "transfer/fault/fault_transport.h"
#include "transfer/transport_factory.h"
#include "node_test_util.h"

namespace smartgen::node {
namespace {

using nlohmann::json;

constexpr std::uint64_t kSmartgenModelSeed = 21;
std::string ModelPath() { return testing::SmallModelPath(kSmartgenModelSeed); }
NodeConfig Config(const std::string& name) { return testing::SmallNodeConfig(name, kSmartgenModelSeed); }

std::vector<std::int32_t> SmartgenPrompt(int n, int salt) {
  std::vector<std::int32_t> p(n);
  for (int i = 0; i < n; ++i) p[i] = 3 + (i * 31 + salt * 17) % 250;
  return p;
}

class SmartgenDeployment : public ::testing::Test {
 protected:
  void Start(std::shared_ptr<transfer::Transport> prefill_transport = nullptr,
             double link_gbps = 0) {
    NodeConfig pc = Config("prefill");
    pc.link_gbps = link_gbps;
    auto p = PrefillNode::Create(pc, std::move(prefill_transport));
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    ASSERT_TRUE((*p)->Start().ok());
    prefill_ = std::move(*p);
    auto d = DecodeNode::Create(Config("decode"));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    ASSERT_TRUE((*d)->Start().ok());
    decode_ = std::move(*d);
    RouterConfig rc;
    rc.model_path = ModelPath();
    rc.prefill_nodes = {"127.0.0.1:" + std::to_string(prefill_->http_port())};
    rc.decode_nodes = {"127.0.0.1:" + std::to_string(decode_->http_port())};
    auto r = Router::Create(rc);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    router_ = std::move(*r);
  }

  Result<std::vector<std::int32_t>> Run(const std::string& mode, const std::vector<std::int32_t>& prompt,
                                        int max_tokens, const json& options, json* stats = nullptr) {
    RouteRequest rq = testing::TestRequest(mode, prompt, max_tokens);
    rq.spec.options = options;
    std::vector<std::int32_t> out;
    auto r = testing::GenerateTokens(*router_, rq, &out);
    if (!r.ok()) return r.status();
    if (stats) *stats = r->stats;
    return out;
  }

  std::vector<std::int32_t> Reference(const std::vector<std::int32_t>& prompt, int max_tokens) {
    return testing::ReferenceTokens(ModelPath(), prompt, max_tokens);
  }

  std::unique_ptr<PrefillNode> prefill_;
  std::unique_ptr<DecodeNode> decode_;
  std::unique_ptr<Router> router_;
};

TEST_F(SmartgenDeployment, SelectingEveryBlockEqualsLayerwise) {
  Start();
  const auto prompt = SmartgenPrompt(300, 1);
  const auto want = Reference(prompt, 16);
  auto layerwise = Run("layerwise", prompt, 16, nullptr);
  ASSERT_TRUE(layerwise.ok()) << layerwise.status().ToString();
  EXPECT_EQ(*layerwise, want);
  // A small proactive set (R = 8), every block selected each step: the missing ones are
  // fetched on demand and merged by LSE, so the output is exact from the first step.
  // (With the first step on, the prefill node's run of it selects every block too and pushes
  // them at once; without it, they come on demand.)
  for (auto [speculative, first_step] : {std::pair{false, false}, std::pair{true, false}, std::pair{false, true}}) {
    json stats;
    // No wait bound: every step waits for what it selected.
    const json options = {{"budget_fraction", 1.0}, {"proactive_ratio", 8.0},
                          {"speculative", speculative}, {"wait_bound_ms", 1e6},
                          {"first_step", first_step}};
    auto got = Run("smartgen", prompt, 16, options, &stats);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, want) << stats.dump();
    EXPECT_EQ(stats.value("mode", ""), "smartgen");
    if (first_step) {
      EXPECT_GT(stats["bytes_by_path"]["first_step"].get<double>(), 0) << stats.dump();
    }
    // Without the speculative stream, the blocks outside the proactive set can only come on
    // demand (with it, an unshaped link may deliver everything before the first step).
    if (!speculative && !first_step) {
      EXPECT_GT(stats["bytes_by_path"]["on_demand"].get<double>(), 0) << stats.dump();
    }
    EXPECT_GT(stats["bytes_by_path"]["proactive"].get<double>(), 0) << stats.dump();
    EXPECT_FALSE(stats.value("recomputed_locally", true));
  }
}

TEST_F(SmartgenDeployment, SmallBudgetsCompleteWithConsistentAccounting) {
  Start();
  const auto prompt = SmartgenPrompt(400, 2);
  for (const json& options :
       {json{{"proactive_ratio", 4.0}},
        json{{"proactive_ratio", 4.0}, {"on_demand", false}, {"speculative", false}},
        json{{"proactive_ratio", 4.0}, {"speculative", false}},
        json{{"proactive_ratio", 4.0}, {"budget_fraction", 0.05}, {"predict_next", false}}}) {
    json stats;
    auto got = Run("smartgen", prompt, 24, options, &stats);
    ASSERT_TRUE(got.ok()) << options.dump() << ": " << got.status().ToString();
    EXPECT_EQ(got->size(), 24u);
    const double full = stats["prefill"]["stats"]["kv_bytes"].get<double>();
    const json& by_path = stats["bytes_by_path"];
    const double sent = by_path["proactive"].get<double>() + by_path["on_demand"].get<double>() +
                        by_path["speculative"].get<double>();
    EXPECT_LE(stats["kv_bytes_received"].get<double>(), 1.05 * full) << stats.dump();
    // On the wire: the blocks kept, those dropped as duplicates, and the summaries.
    const double on_wire = stats["kv_bytes_on_wire"].get<double>();
    EXPECT_NEAR(on_wire,
                stats["kv_bytes_received"].get<double>() + by_path["summaries"].get<double>() +
                    stats["kv_blocks_duplicate"].get<double>() * stats["prefill"]["stats"]["kv_bytes"].get<double>() /
                        stats["blocks_total"].get<double>(),
                1.0)
        << stats.dump();
    EXPECT_GT(sent, 0) << stats.dump();
    if (!options.value("on_demand", true)) {
      EXPECT_EQ(by_path["on_demand"].get<double>(), 0) << "ablation: no on-demand fetches";
    }
  }
  // With the speculative path on and a long enough output, the request becomes exact.
  json stats;
  auto got = Run("smartgen", prompt, 48, json{{"proactive_ratio", 4.0}}, &stats);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(stats.contains("time_to_exact_ms")) << stats.dump();

  // The same figures, summed over the requests, on the nodes' /metrics.
  const std::string decode_metrics = decode_->MetricsText();
  const auto value_of = [&](const std::string& series) {
    const std::size_t at = decode_metrics.find(series + " ");
    return at == std::string::npos ? -1.0 : std::stod(decode_metrics.substr(at + series.size() + 1));
  };
  EXPECT_GE(value_of("smartgen_decode_time_to_exact_seconds_count"), 1.0) << decode_metrics;
  EXPECT_EQ(value_of("smartgen_decode_on_demand_ratio_count"), 5.0) << decode_metrics;  // 5 requests
  EXPECT_GT(value_of("smartgen_decode_kv_bytes_by_path_total{path=\"proactive\"}"), 0.0) << decode_metrics;
  for (const char* want : {"smartgen_decode_kv_bytes_by_path_total{path=\"summaries\"}",
                           "smartgen_decode_layer_stall_seconds_total{layer=\"0\"}"}) {
    EXPECT_NE(decode_metrics.find(want), std::string::npos) << want << "\n" << decode_metrics;
  }
  EXPECT_NE(prefill_->MetricsText().find("smartgen_prefill_speculative_blocks_total{outcome=\"cancelled\"}"),
            std::string::npos)
      << prefill_->MetricsText();
}

// int8_wire: the proactive, first-step and on-demand copies travel as int8 (about half the
// bytes), and the speculative stream still makes the request exact. The prompt (300 tokens)
// leaves the last block partial, whose copies are staged so the rows decoded into it stay.
TEST_F(SmartgenDeployment, Int8WireCopiesAreSmallerAndTheRequestStillBecomesExact) {
  Start();
  const auto prompt = SmartgenPrompt(300, 3);
  const auto want = Reference(prompt, 40);
  json stats;
  auto got =
      Run("smartgen", prompt, 40,
          json{{"proactive_ratio", 4.0}, {"int8_wire", true}, {"budget_fraction", 0.3}}, &stats);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 40u);
  EXPECT_TRUE(stats.value("int8_wire", false)) << stats.dump();
  EXPECT_TRUE(stats.contains("time_to_exact_ms")) << stats.dump();
  EXPECT_EQ(stats["blocks_approximate"].get<int>(), 0) << stats.dump();
  EXPECT_FALSE(stats.value("recomputed_locally", true));
  // The proactive copies took the int8 size: 2 x 16 x (4 + head_dim) bytes a block.
  const json& prefill = stats["prefill"]["stats"];
  const double native_block =
      prefill["kv_bytes"].get<double>() / stats["blocks_total"].get<double>();
  const double proactive_blocks = prefill["smartgen"]["proactive_blocks"].get<double>();
  ASSERT_GT(proactive_blocks, 0);
  const double per_block = stats["bytes_by_path"]["proactive"].get<double>() / proactive_blocks;
  EXPECT_LT(per_block, 0.6 * native_block) << stats.dump();
  // Every block crossed exactly once more (the speculative copy): bytes on the wire stay under
  // the full KV plus the int8 copies.
  EXPECT_LE(stats["kv_bytes_on_wire"].get<double>(), 1.6 * prefill["kv_bytes"].get<double>())
      << stats.dump();
  // The tokens are those of an approximate KV until it is exact: most match the reference.
  int same = 0;
  for (std::size_t i = 0; i < want.size(); ++i) same += (*got)[i] == want[i];
  EXPECT_GE(same, 30) << stats.dump();
}

TEST_F(SmartgenDeployment, AutoPicksLayerwiseOnAFastLinkAndSmartgenOnASlowOne) {
  Start(nullptr, /*link_gbps=*/0);
  json stats;
  ASSERT_TRUE(Run("auto", SmartgenPrompt(100, 3), 4, nullptr, &stats).ok());
  EXPECT_EQ(stats.value("mode", ""), "layerwise") << stats.dump();
}

TEST_F(SmartgenDeployment, LinkDyingMidDecodeIsRecoveredExactly) {
  // The prefill node's KV link is cut after ~150 KB: part of the proactive set and the
  // on-demand fetches get through, then the decode node recomputes the missing KV itself.
  transfer::FaultPlan plan;
  plan.seed = 5;
  plan.disconnect_after_bytes = 150 << 10;
  auto tcp = transfer::MakeTransport("tcp");
  ASSERT_TRUE(tcp.ok());
  Start(std::make_shared<transfer::FaultTransport>(*tcp, plan));
  const auto prompt = SmartgenPrompt(400, 4);
  const auto want = Reference(prompt, 12);
  json stats;
  auto got = Run("smartgen", prompt, 12,
                 json{{"budget_fraction", 1.0}, {"proactive_ratio", 8.0}, {"wait_bound_ms", 1e6}}, &stats);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, want) << stats.dump();
  EXPECT_TRUE(stats.value("fallback", false) || stats.value("recomputed_locally", false)) << stats.dump();
}

}  // namespace
}  // namespace smartgen::node
