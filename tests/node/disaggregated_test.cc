// A whole disaggregated deployment in one process over loopback TCP: a router, prefill and
// decode nodes on a tiny synthetic model. Outputs must not depend on the transfer mode, on
// batching, or on failures the system recovers from.
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "kv/block_pool.h"
#include "model/generate.h"
#include "model/synthetic_model.h"
#include "node/decode/decode_node.h"
#include "node/prefill/prefill_node.h"
#include "node/router/router.h"
#include "node_test_util.h"

namespace smartgen::node {
namespace {

constexpr std::uint64_t kDeploymentModelSeed = 11;
std::string TinyModelPath() { return testing::SmallModelPath(kDeploymentModelSeed); }
NodeConfig BaseConfig(const std::string& name) { return testing::SmallNodeConfig(name, kDeploymentModelSeed); }

std::vector<std::int32_t> Prompt(int n, int salt) {
  std::vector<std::int32_t> p(n);
  for (int i = 0; i < n; ++i) p[i] = 3 + (i * 29 + salt * 13) % 250;
  return p;
}

class Deployment : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      auto p = PrefillNode::Create(BaseConfig("prefill" + std::to_string(i)));
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      ASSERT_TRUE((*p)->Start().ok());
      prefills_.push_back(std::move(*p));
    }
    auto d = DecodeNode::Create(BaseConfig("decode0"));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    ASSERT_TRUE((*d)->Start().ok());
    decode_ = std::move(*d);
    router_ = MakeRouter();
    ASSERT_NE(router_, nullptr);
  }

  std::unique_ptr<Router> MakeRouter() {
    RouterConfig rc;
    rc.model_path = TinyModelPath();
    for (auto& p : prefills_) rc.prefill_nodes.push_back("127.0.0.1:" + std::to_string(p->http_port()));
    rc.decode_nodes.push_back("127.0.0.1:" + std::to_string(decode_->http_port()));
    auto r = Router::Create(rc);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(*r) : nullptr;
  }

  // Tokens of one request through the router.
  Result<std::vector<std::int32_t>> Run(const std::string& mode, const std::vector<std::int32_t>& prompt,
                                        int max_tokens, model::SamplingParams sampling = {},
                                        RouteResult* result = nullptr) {
    RouteRequest rq = testing::TestRequest(mode, prompt, max_tokens);
    rq.spec.sampling = sampling;
    std::vector<std::int32_t> out;
    auto r = testing::GenerateTokens(*router_, rq, &out);
    if (!r.ok()) return r.status();
    if (result) *result = *r;
    return out;
  }

  // The same request in one process, without any node.
  std::vector<std::int32_t> Reference(const std::vector<std::int32_t>& prompt, int max_tokens,
                                      model::SamplingParams sampling = {}) {
    return testing::ReferenceTokens(TinyModelPath(), prompt, max_tokens, sampling);
  }

  std::vector<std::unique_ptr<PrefillNode>> prefills_;
  std::unique_ptr<DecodeNode> decode_;
  std::unique_ptr<Router> router_;
};

TEST_F(Deployment, EveryModeGivesTheSingleProcessTokens) {
  const auto prompt = Prompt(150, 1);
  const auto want = Reference(prompt, 12);
  for (const char* mode : {"colocated", "full", "layerwise", "auto"}) {
    RouteResult result;
    auto got = Run(mode, prompt, 12, {}, &result);
    ASSERT_TRUE(got.ok()) << mode << ": " << got.status().ToString();
    EXPECT_EQ(*got, want) << mode;
    EXPECT_EQ(result.finish_reason, "length") << mode;
    EXPECT_FALSE(result.stats.value("fallback", true)) << mode;
  }
  // Sampling with a seed: the decode node continues the prefill node's draws exactly.
  const model::SamplingParams hot{0.9f, 40, 0.95f, 1234};
  const auto want_hot = Reference(prompt, 12, hot);
  for (const char* mode : {"colocated", "full", "layerwise"}) {
    auto got = Run(mode, prompt, 12, hot);
    ASSERT_TRUE(got.ok()) << mode << ": " << got.status().ToString();
    EXPECT_EQ(*got, want_hot) << mode;
  }
}

TEST_F(Deployment, ConcurrentRequestsAreBatchedAndEachAnsweredOnce) {
  constexpr int kRequests = 12;
  std::vector<std::vector<std::int32_t>> prompts, want(kRequests), got(kRequests);
  for (int i = 0; i < kRequests; ++i) prompts.push_back(Prompt(20 + 7 * i, i));
  for (int i = 0; i < kRequests; ++i) want[i] = Reference(prompts[i], 10);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  const char* modes[] = {"colocated", "full", "layerwise"};
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] {
      auto r = Run(modes[i % 3], prompts[i], 10);
      if (!r.ok()) {
        ADD_FAILURE() << r.status().ToString();
        failures++;
        return;
      }
      got[i] = *r;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  for (int i = 0; i < kRequests; ++i) EXPECT_EQ(got[i], want[i]) << "request " << i;
  EXPECT_NE(decode_->MetricsText().find("smartgen_decode_requests_total{outcome=\"ok\"} 12"),
            std::string::npos)
      << decode_->MetricsText();
}

TEST_F(Deployment, PrefillNodeDownFallsBackToLocalPrefill) {
  const auto prompt = Prompt(90, 3);
  const auto want = Reference(prompt, 8);
  prefills_[0]->Stop();
  prefills_[1]->Stop();
  RouteResult result;
  auto got = Run("layerwise", prompt, 8, {}, &result);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, want);
  EXPECT_TRUE(result.stats.value("fallback", false)) << result.stats.dump();
  EXPECT_TRUE(result.stats.contains("prefill_error")) << result.stats.dump();
}

TEST_F(Deployment, DecodeNodeDownIsACleanUnavailableError) {
  decode_->Stop();
  const core::Stopwatch watch;
  auto got = Run("layerwise", Prompt(40, 4), 8);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable) << got.status().ToString();
  EXPECT_LT(watch.ElapsedSeconds(), 10.0);
}

TEST_F(Deployment, BadRequestsGetClearErrors) {
  auto past = Run("layerwise", Prompt(8100, 5), 200);
  EXPECT_EQ(past.status().code(), StatusCode::kOutOfRange) << past.status().ToString();
  auto bad_mode = Run("teleport", Prompt(10, 5), 4);
  EXPECT_EQ(bad_mode.status().code(), StatusCode::kInvalidArgument);
  auto bad_token = Run("full", {1, 2, 100000}, 4);
  EXPECT_EQ(bad_token.status().code(), StatusCode::kInvalidArgument) << bad_token.status().ToString();
}

TEST_F(Deployment, ClientCancellationStopsTheRequest) {
  RouteRequest rq;
  rq.spec.prompt = Prompt(60, 6);
  rq.spec.max_tokens = 500;
  rq.mode = "layerwise";
  rq.spec.stop_at_eog = false;
  rq.deadline = core::Deadline::After(core::Seconds(30));
  int seen = 0;
  auto r = router_->Generate(rq, [&](std::int32_t) { return ++seen < 3; });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->finish_reason, "cancelled");
  EXPECT_EQ(seen, 3);
}

}  // namespace
}  // namespace smartgen::node
