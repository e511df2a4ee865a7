// n > 1 choices through a whole deployment over loopback TCP (GenerationSpec::n): one prefill
// and one KV transfer per request whatever n is, the decode node forking the prompt's KV into
// each choice. Greedy choices equal each other and the one-choice answer; sampled choice i
// equals the one-choice request with seed + i, so the choices differ and are reproducible.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "control_test_util.h"
#include "node/decode/decode_node.h"
#include "node/prefill/prefill_node.h"
#include "node/router/router.h"
#include "node_test_util.h"
#include "transfer/fault/fault_transport.h"
#include "transfer/transport_factory.h"

namespace smartgen::node {
namespace {

using nlohmann::json;

constexpr std::uint64_t kChoicesModelSeed = 23;

std::vector<std::int32_t> ChoicesPrompt(int n, int salt) {
  std::vector<std::int32_t> p(n);
  for (int i = 0; i < n; ++i) p[i] = 3 + (i * 37 + salt * 11) % 250;
  return p;
}

// The value of one series ("name{labels}") in Prometheus text; -1 when absent.
double Series(const std::string& text, const std::string& series) {
  const std::string key = "\n" + series + " ";
  const std::string all = "\n" + text;
  const auto at = all.find(key);
  return at == std::string::npos ? -1 : std::stod(all.substr(at + key.size()));
}

struct Output {
  std::vector<std::vector<std::int32_t>> tokens;  // per choice
  int with_logprobs = 0;                          // tokens that came with log-probabilities
  RouteResult result;
};

class Choices : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = PrefillNode::Create(testing::SmallNodeConfig("prefill", kChoicesModelSeed));
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    ASSERT_TRUE((*p)->Start().ok());
    prefill_ = std::move(*p);
    auto d = DecodeNode::Create(testing::SmallNodeConfig("decode", kChoicesModelSeed));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    ASSERT_TRUE((*d)->Start().ok());
    decode_ = std::move(*d);
    RouterConfig rc;
    rc.model_path = testing::SmallModelPath(kChoicesModelSeed);
    rc.prefill_nodes = {"127.0.0.1:" + std::to_string(prefill_->http_port())};
    rc.decode_nodes = {"127.0.0.1:" + std::to_string(decode_->http_port())};
    auto r = Router::Create(rc);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    router_ = std::move(*r);
  }

  Result<Output> Run(const std::string& mode, const std::vector<std::int32_t>& prompt,
                     int max_tokens, int n, model::SamplingParams sampling = {},
                     const json& options = nullptr) {
    RouteRequest rq = testing::TestRequest(mode, prompt, max_tokens);
    rq.spec.n = n;
    rq.spec.sampling = sampling;
    rq.spec.options = options;
    Output out;
    out.tokens.resize(static_cast<std::size_t>(n));
    auto r = router_->Generate(
        rq, Router::ChoiceSink([&](int choice, std::int32_t t, const model::TokenLogprobs* lp) {
          out.tokens.at(static_cast<std::size_t>(choice)).push_back(t);
          if (lp) ++out.with_logprobs;
          return true;
        }));
    if (!r.ok()) return r.status();
    out.result = std::move(*r);
    return out;
  }

  double PrefillsOk() const {
    return Series(prefill_->MetricsText(), "smartgen_prefill_requests_total{outcome=\"ok\"}");
  }
  double DecodesOk() const {
    return Series(decode_->MetricsText(), "smartgen_decode_requests_total{outcome=\"ok\"}");
  }
  double BytesPosted() const {
    return Series(prefill_->MetricsText(), "smartgen_prefill_kv_bytes_posted_total");
  }

  std::unique_ptr<PrefillNode> prefill_;
  std::unique_ptr<DecodeNode> decode_;
  std::unique_ptr<Router> router_;
};

// SmartGen selecting every block (so greedy output is exact from the first step), with and
// without the speculative stream: without it the decode node pulls the rest itself so that the
// KV gets exact and the other choices can fork.
json SmartgenOptions(bool speculative, bool first_step = true, double budget_fraction = 1.0) {
  return {{"budget_fraction", budget_fraction},
          {"proactive_ratio", 8.0},
          {"wait_bound_ms", 1e6},
          {"speculative", speculative},
          {"first_step", first_step}};
}

TEST_F(Choices, OnePrefillAndOneTransferServeEveryChoiceInEveryMode) {
  const auto prompt = ChoicesPrompt(150, 1);  // 150 tokens: a partial last block of 16
  constexpr int kTokens = 10;
  struct Case {
    const char* mode;
    json options;
  };
  const Case cases[] = {{"full", nullptr},
                        {"layerwise", nullptr},
                        {"smartgen", SmartgenOptions(true)},
                        {"smartgen", SmartgenOptions(false)},
                        // Without the first step's push the blocks come on demand; the other
                        // choices start once the last of them is here.
                        {"smartgen", SmartgenOptions(true, false)},
                        {"smartgen", SmartgenOptions(false, false)},
                        {"auto", nullptr},
                        {"colocated", nullptr}};
  const auto want =
      testing::ReferenceTokens(testing::SmallModelPath(kChoicesModelSeed), prompt, kTokens);
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.mode) + " " + c.options.dump());
    auto one = Run(c.mode, prompt, kTokens, 1, {}, c.options);
    ASSERT_TRUE(one.ok()) << one.status().ToString();
    EXPECT_EQ(one->tokens[0], want);
    const double prefills = PrefillsOk(), posted = BytesPosted(), decodes = DecodesOk();
    auto three = Run(c.mode, prompt, kTokens, 3, {}, c.options);
    ASSERT_TRUE(three.ok()) << three.status().ToString();
    for (int i = 0; i < 3; ++i) EXPECT_EQ(three->tokens[i], want) << "choice " << i;
    const json& stats = three->result.stats;
    EXPECT_EQ(three->result.finish_reason, "length") << stats.dump();
    EXPECT_EQ(stats.value("finish_reasons", json()), json({"length", "length", "length"}))
        << stats.dump();
    EXPECT_EQ(stats.value("choices", 0), 3);
    EXPECT_FALSE(stats.value("fallback", true)) << stats.dump();
    if (std::string(c.mode) == "colocated") {
      EXPECT_EQ(PrefillsOk(), prefills);  // the decode node computed the prompt, once
      continue;
    }
    // (a) one prefill, (b) one KV transfer: the prefill node posted what the one-choice request
    // made it post (full, layerwise), and the decode node received the prompt's KV once.
    EXPECT_EQ(PrefillsOk(), prefills + 1);
    const double kv_bytes = stats["prefill"]["stats"].value("kv_bytes_needed", 0.0);
    ASSERT_GT(kv_bytes, 0) << stats.dump();
    // One request on the decode node, keeping one copy of the prompt's KV (three transfers
    // would be three requests and three times the KV). (SmartGen may also carry duplicates on
    // an unshaped link - a block pushed and fetched - which the decode node drops; they are
    // not counted here.)
    EXPECT_EQ(DecodesOk(), decodes + 1);
    EXPECT_LE(stats.value("kv_bytes_received", 0.0), 1.25 * kv_bytes) << stats.dump();
    if (std::string(c.mode) == "full" || std::string(c.mode) == "layerwise") {
      EXPECT_EQ(BytesPosted() - posted, kv_bytes);
      EXPECT_EQ(stats.value("kv_bytes_received", 0.0), kv_bytes) << stats.dump();
    }
  }
  // Nothing is left behind: every choice's KV went back to the pool.
  EXPECT_TRUE(testing::WaitUntil(
      [&] {
        return decode_->active_requests() == 0 &&
               Series(decode_->MetricsText(), "smartgen_decode_kv_blocks_used") == 0;
      },
      core::Seconds(5)))
      << decode_->MetricsText();
}

// SmartGen selecting a quarter of the blocks, without the speculative stream: choice 0 decodes
// selectively as a one-choice request would, and the KV only gets exact because the decode
// node pulls the rest for the other choices, which then decode densely - exactly.
TEST_F(Choices, SelectiveSmartgenForksTheOtherChoicesOnceThePulledKvIsExact) {
  const auto prompt = ChoicesPrompt(300, 4);
  constexpr int kTokens = 8;
  const auto want =
      testing::ReferenceTokens(testing::SmallModelPath(kChoicesModelSeed), prompt, kTokens);
  const json options = SmartgenOptions(/*speculative=*/false, /*first_step=*/false, 0.25);
  auto three = Run("smartgen", prompt, kTokens, 3, {}, options);
  ASSERT_TRUE(three.ok()) << three.status().ToString();
  const json& stats = three->result.stats;
  EXPECT_EQ(three->tokens[1], want) << stats.dump();
  EXPECT_EQ(three->tokens[2], want) << stats.dump();
  EXPECT_EQ(three->tokens[0].size(), static_cast<std::size_t>(kTokens));
  EXPECT_EQ(stats.value("blocks_present", 0), stats.value("blocks_needed", -1)) << stats.dump();
  EXPECT_FALSE(stats.value("recomputed_locally", true)) << stats.dump();
  EXPECT_FALSE(stats.value("fallback", true)) << stats.dump();
}

TEST_F(Choices, SampledChoicesDifferAreReproducibleAndEachIsTheRequestWithItsSeed) {
  const auto prompt = ChoicesPrompt(90, 2);
  constexpr int kTokens = 12;
  model::SamplingParams hot{0.9f, 40, 0.95f, 1234};
  hot.presence_penalty = 0.5f;  // the penalties of each choice see its own output only
  hot.logprobs = 2;
  for (const char* mode : {"full", "smartgen", "colocated"}) {
    SCOPED_TRACE(mode);
    const json options = std::string(mode) == "smartgen" ? SmartgenOptions(true) : json(nullptr);
    auto a = Run(mode, prompt, kTokens, 3, hot, options);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    auto b = Run(mode, prompt, kTokens, 3, hot, options);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(a->tokens, b->tokens);  // reproducible
    EXPECT_NE(a->tokens[0], a->tokens[1]);
    EXPECT_NE(a->tokens[1], a->tokens[2]);
    EXPECT_EQ(a->with_logprobs, 3 * kTokens);  // logprobs for every token of every choice
    for (int i = 0; i < 3; ++i) {
      model::SamplingParams seeded = hot;
      seeded.seed += static_cast<std::uint64_t>(i);
      auto one = Run(mode, prompt, kTokens, 1, seeded, options);
      ASSERT_TRUE(one.ok()) << one.status().ToString();
      EXPECT_EQ(a->tokens[i], one->tokens[0]) << "choice " << i;
    }
  }
}

// The KV link dies after ~700 KB, after PrefillDone, while choice 0 decodes selectively: the
// choices waiting for exact KV get it by computing what is missing themselves.
TEST(ChoicesFaults, ALinkThatDiesBeforeTheKvIsExactIsRecoveredForTheWaitingChoices) {
  transfer::FaultPlan plan;
  plan.seed = 7;
  plan.disconnect_after_bytes = 700 << 10;
  auto tcp = transfer::MakeTransport("tcp");
  ASSERT_TRUE(tcp.ok());
  auto p = PrefillNode::Create(testing::SmallNodeConfig("prefill", kChoicesModelSeed),
                               std::make_shared<transfer::FaultTransport>(*tcp, plan));
  ASSERT_TRUE(p.ok() && (*p)->Start().ok());
  auto d = DecodeNode::Create(testing::SmallNodeConfig("decode", kChoicesModelSeed));
  ASSERT_TRUE(d.ok() && (*d)->Start().ok());
  RouterConfig rc;
  rc.model_path = testing::SmallModelPath(kChoicesModelSeed);
  rc.prefill_nodes = {"127.0.0.1:" + std::to_string((*p)->http_port())};
  rc.decode_nodes = {"127.0.0.1:" + std::to_string((*d)->http_port())};
  auto router = Router::Create(rc);
  ASSERT_TRUE(router.ok());
  const auto prompt = ChoicesPrompt(400, 6);
  constexpr int kTokens = 6;
  const auto want =
      testing::ReferenceTokens(testing::SmallModelPath(kChoicesModelSeed), prompt, kTokens);
  RouteRequest rq = testing::TestRequest("smartgen", prompt, kTokens);
  rq.spec.n = 3;
  // Choice 0 attends over what the prefill node pushed and never fetches (so its session never
  // recomputes); only the decode node's pull for the other choices asks for the rest.
  rq.spec.options = SmartgenOptions(/*speculative=*/false, /*first_step=*/false, 0.25);
  rq.spec.options["on_demand"] = false;
  std::vector<std::vector<std::int32_t>> got(3);
  const core::Stopwatch watch;
  auto r = (*router)->Generate(
      rq, Router::ChoiceSink([&](int c, std::int32_t t, const model::TokenLogprobs*) {
        got[static_cast<std::size_t>(c)].push_back(t);
        return true;
      }));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_LT(watch.ElapsedSeconds(), 10.0);  // never waits for the request's deadline
  EXPECT_EQ(got[1], want) << r->stats.dump();
  EXPECT_EQ(got[2], want) << r->stats.dump();
  EXPECT_TRUE(r->stats.value("fallback", false) || r->stats.value("recomputed_locally", false))
      << r->stats.dump();
}

// A measurement, not a check (docs/RESULTS.md): TTST of each choice at the router, n = 1 and
// n = 3, full and SmartGen (defaults) over an emulated link of SMARTGEN_CHOICES_GBPS Gbit/s
// (default 0.1), a prompt of 2048 tokens. Prints one JSON line per request.
//   build-cc/tests/node/node_test --gtest_also_run_disabled_tests
//     --gtest_filter='ChoicesTtst.DISABLED_PerChoiceTtst'   (one command line)
TEST(ChoicesTtst, DISABLED_PerChoiceTtst) {
  const char* env = std::getenv("SMARTGEN_CHOICES_GBPS");
  const double gbps = env ? std::atof(env) : 0.1;
  NodeConfig pc = testing::SmallNodeConfig("prefill", kChoicesModelSeed);
  pc.link_gbps = gbps;
  pc.warmup_tokens = 2048;
  auto p = PrefillNode::Create(pc);
  ASSERT_TRUE(p.ok() && (*p)->Start().ok());
  auto d = DecodeNode::Create(testing::SmallNodeConfig("decode", kChoicesModelSeed));
  ASSERT_TRUE(d.ok() && (*d)->Start().ok());
  RouterConfig rc;
  rc.model_path = testing::SmallModelPath(kChoicesModelSeed);
  rc.prefill_nodes = {"127.0.0.1:" + std::to_string((*p)->http_port())};
  rc.decode_nodes = {"127.0.0.1:" + std::to_string((*d)->http_port())};
  auto router = Router::Create(rc);
  ASSERT_TRUE(router.ok());
  const auto prompt = ChoicesPrompt(2048, 5);
  for (int rep = 0; rep < 3; ++rep) {
    for (const char* mode : {"full", "smartgen"}) {
      for (int n : {1, 3}) {
        RouteRequest rq = testing::TestRequest(mode, prompt, 8);
        rq.spec.n = n;
        std::vector<std::vector<core::Nanos>> at(static_cast<std::size_t>(n));
        auto r = (*router)->Generate(
            rq, Router::ChoiceSink([&](int c, std::int32_t, const model::TokenLogprobs*) {
              at[static_cast<std::size_t>(c)].push_back(core::NowNanos());
              return true;
            }));
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        json ttst = json::array();
        for (const auto& times : at)
          ttst.push_back(times.size() > 1 ? core::ToMillis(times[1] - times[0]) : -1.0);
        const json& st = r->stats;
        std::printf("%s\n", json{{"mode", mode},
                                 {"n", n},
                                 {"gbps", gbps},
                                 {"ttst_ms", ttst},
                                 {"prefill_ms", st["prefill"].value("prefill_ms", 0.0)},
                                 {"kv_bytes", st["prefill"]["stats"].value("kv_bytes", 0.0)},
                                 {"time_to_exact_ms", st.value("time_to_exact_ms", 0.0)}}
                                .dump()
                                .c_str());
      }
    }
  }
}

TEST_F(Choices, RequestsThatCannotHaveChoicesAreRefused) {
  RouteRequest rq = testing::TestRequest("full", ChoicesPrompt(20, 3), 4);
  rq.spec.n = kMaxChoices + 1;
  const auto sink =
      Router::ChoiceSink([](int, std::int32_t, const model::TokenLogprobs*) { return true; });
  EXPECT_EQ(router_->Generate(rq, sink).status().code(), StatusCode::kInvalidArgument);
  rq.spec.n = 2;
  rq.spec.forced_tokens = {5, 6};
  EXPECT_EQ(router_->Generate(rq, sink).status().code(), StatusCode::kInvalidArgument);
  // A one-choice sink cannot take several choices.
  rq.spec.forced_tokens.clear();
  EXPECT_EQ(testing::GenerateTokens(*router_, rq, nullptr).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace smartgen::node
