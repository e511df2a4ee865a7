// The OpenAI HTTP API over a real disaggregated deployment in one process: prefill nodes,
// decode nodes, the router (RouterBackend) and the HTTP server, on loopback. Outputs must be
// token-identical across transfer modes (checked through curl's SSE stream too), a bounded load
// test must answer every request once with metrics that add up, and killing a node mid-request
// must give that client a clean error (or a correct answer) while the router keeps serving.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "model/synthetic_model.h"
#include "node/decode/decode_node.h"
#include "node/prefill/prefill_node.h"
#include "node/router/router.h"
#include "server/http_server.h"
#include "server/router_backend.h"
#include "test_util.h"

namespace smartgen::server {
namespace {

using testing::json;

std::string ModelPath() {
  static const std::string path = [] {
    model::SyntheticModelSpec spec;
    spec.preset = *model::FindPreset("small");
    spec.type = gguf::GgmlType::kF32;
    spec.seed = 31;
    spec.out = ::testing::TempDir() + "/deployment_http_test.gguf";
    EXPECT_TRUE(model::WriteSyntheticModel(spec).ok());
    return spec.out;
  }();
  return path;
}

node::NodeConfig NodeConfigFor(const std::string& name) {
  node::NodeConfig c;
  c.name = name;
  c.model_path = ModelPath();
  c.threads = 1;
  c.kv_dtype = "f32";
  c.kv_capacity_tokens = 1 << 15;
  return c;
}

class HttpDeployment : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      auto p = node::PrefillNode::Create(NodeConfigFor("prefill" + std::to_string(i)));
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      ASSERT_TRUE((*p)->Start().ok());
      prefills_.push_back(std::move(*p));
      auto d = node::DecodeNode::Create(NodeConfigFor("decode" + std::to_string(i)));
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      ASSERT_TRUE((*d)->Start().ok());
      decodes_.push_back(std::move(*d));
    }
    node::RouterConfig rc;
    rc.model_path = ModelPath();
    for (auto& p : prefills_) rc.prefill_nodes.push_back("127.0.0.1:" + std::to_string(p->http_port()));
    for (auto& d : decodes_) rc.decode_nodes.push_back("127.0.0.1:" + std::to_string(d->http_port()));
    auto router = node::Router::Create(rc);
    ASSERT_TRUE(router.ok()) << router.status().ToString();
    backend_ = std::make_unique<RouterBackend>(std::move(*router));
    HttpServerOptions options;
    options.max_concurrent = 48;
    server_ = std::make_unique<HttpServer>(backend_.get(), options);
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }

  static json Body(const std::vector<std::int32_t>& prompt, int max_tokens, const std::string& mode,
                   bool stream, json options = nullptr) {
    json ext = {{"mode", mode}, {"return_token_ids", true}, {"ignore_eos", true}};
    if (!options.is_null()) ext["options"] = options;
    return {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0},
            {"stream", stream}, {"smartgen", ext}};
  }

  std::vector<std::unique_ptr<node::PrefillNode>> prefills_;
  std::vector<std::unique_ptr<node::DecodeNode>> decodes_;
  std::unique_ptr<RouterBackend> backend_;
  std::unique_ptr<HttpServer> server_;
};

std::vector<std::int32_t> Prompt(int n, int salt) {
  std::vector<std::int32_t> p(n);
  for (int i = 0; i < n; ++i) p[i] = 32 + (i * 7 + salt * 3) % 90;
  return p;
}

// Runs curl with a streaming request and returns its SSE data payloads.
std::vector<json> CurlStream(int port, const json& body) {
  const std::string path = ::testing::TempDir() + "/curl_body.json";
  std::FILE* f = std::fopen(path.c_str(), "w");
  const std::string text = body.dump();
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  const std::string cmd = "curl -sN --max-time 60 -H 'Content-Type: application/json' --data @" +
                          path + " http://127.0.0.1:" + std::to_string(port) + "/v1/completions";
  std::FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << cmd;
  std::vector<json> chunks;
  std::size_t at = 0;
  while ((at = out.find("data: ", at)) != std::string::npos) {
    const std::size_t end = out.find("\n\n", at);
    const std::string data = out.substr(at + 6, end - at - 6);
    at = end;
    if (data == "[DONE]") break;
    chunks.push_back(json::parse(data));
  }
  return chunks;
}

TEST_F(HttpDeployment, EveryModeGivesTheSameTokensThroughCurlAndSse) {
  const auto prompt = Prompt(200, 1);
  std::vector<std::vector<std::int32_t>> outputs;
  for (const char* mode : {"colocated", "full", "layerwise", "smartgen", "auto"}) {
    const json options = std::string(mode) == "smartgen"
                             ? json{{"budget_fraction", 1.0}, {"proactive_ratio", 8.0}}
                             : json(nullptr);
    const std::vector<json> chunks = CurlStream(server_->port(), Body(prompt, 12, mode, true, options));
    ASSERT_FALSE(chunks.empty()) << mode;
    const json& last = chunks.back();
    ASSERT_TRUE(last.contains("smartgen")) << mode << ": " << last.dump();
    outputs.push_back(last["smartgen"]["token_ids"].get<std::vector<std::int32_t>>());
    EXPECT_EQ(outputs.back().size(), 12u) << mode;
    EXPECT_EQ(last["choices"][0]["finish_reason"], "length") << mode;
  }
  for (std::size_t i = 1; i < outputs.size(); ++i) EXPECT_EQ(outputs[i], outputs[0]) << "mode #" << i;
  // Non-streaming, through httplib, agrees too.
  const auto reply = testing::PostJson(server_->port(), "/v1/completions", Body(prompt, 12, "layerwise", false));
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.body_json["smartgen"]["token_ids"].get<std::vector<std::int32_t>>(), outputs[0]);
  EXPECT_EQ(reply.body_json["usage"]["completion_tokens"], 12);
  EXPECT_EQ(reply.body_json["usage"]["prompt_tokens"], 200);
}

TEST_F(HttpDeployment, ThirtyTwoConcurrentStreamsAreEachAnsweredOnce) {
  constexpr int kClients = 32, kTokens = 8;
  const char* modes[] = {"colocated", "full", "layerwise", "smartgen"};
  std::vector<testing::StreamReply> replies(kClients);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      replies[i] = testing::PostStream(server_->port(), "/v1/completions",
                                       Body(Prompt(40 + i, i), kTokens, modes[i % 4], true));
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kClients; ++i) {
    ASSERT_EQ(replies[i].status, 200) << "client " << i << ": " << replies[i].raw.substr(0, 300);
    EXPECT_EQ(replies[i].done_count, 1) << "client " << i;
    EXPECT_TRUE(replies[i].done_last) << "client " << i;
    const json& last = replies[i].chunks.back();
    EXPECT_EQ(last["smartgen"]["token_ids"].size(), static_cast<std::size_t>(kTokens)) << "client " << i;
  }
  const auto metrics = testing::ParseMetrics(server_->MetricsText());
  EXPECT_EQ(testing::Metric(metrics, "smartgen_server_requests_total{endpoint=\"completions\",outcome=\"ok\"}"), kClients);
  EXPECT_EQ(testing::Metric(metrics, "smartgen_server_generation_tokens_total"), kClients * kTokens);
  EXPECT_EQ(testing::Metric(metrics, "smartgen_server_ttst_seconds_count"), kClients);
  EXPECT_EQ(testing::Metric(metrics, "smartgen_server_requests_in_flight"), 0);
}

TEST_F(HttpDeployment, KillingADecodeNodeMidRequestGivesACleanErrorAndServiceContinues) {
  // A long request streams; its decode node dies after the first tokens.
  std::atomic<bool> killed{false};
  testing::StreamReply reply;
  std::thread client([&] {
    reply = testing::PostStream(server_->port(), "/v1/completions", Body(Prompt(64, 2), 4000, "layerwise", true));
  });
  // Both decode nodes may serve it: wait until one is decoding, then stop it.
  ASSERT_TRUE(testing::WaitFor([&] {
    for (auto& d : decodes_) {
      if (d->MetricsText().find("smartgen_decode_running 1") != std::string::npos) {
        d->Stop();
        killed = true;
        return true;
      }
    }
    return false;
  }, core::Seconds(20)));
  const core::Stopwatch watch;
  client.join();
  EXPECT_LT(watch.ElapsedSeconds(), 15.0);
  EXPECT_EQ(reply.status, 200);  // streaming had started
  EXPECT_NE(reply.raw.find("error"), std::string::npos) << reply.raw.substr(0, 400);
  EXPECT_TRUE(reply.done_last);
  // The router keeps serving on the other decode node.
  for (int i = 0; i < 3; ++i) {
    const auto ok = testing::PostJson(server_->port(), "/v1/completions", Body(Prompt(30, 9 + i), 4, "layerwise", false));
    EXPECT_EQ(ok.status, 200) << ok.body;
  }
}

TEST_F(HttpDeployment, KillingAPrefillNodeStillAnswersCorrectly) {
  const auto prompt = Prompt(120, 5);
  const auto want = testing::PostJson(server_->port(), "/v1/completions", Body(prompt, 8, "colocated", false));
  ASSERT_EQ(want.status, 200);
  prefills_[0]->Stop();
  prefills_[1]->Stop();
  for (const char* mode : {"layerwise", "smartgen"}) {
    const auto got = testing::PostJson(server_->port(), "/v1/completions", Body(prompt, 8, mode, false));
    ASSERT_EQ(got.status, 200) << mode << ": " << got.body;
    EXPECT_EQ(got.body_json["smartgen"]["token_ids"], want.body_json["smartgen"]["token_ids"]) << mode;
    EXPECT_TRUE(got.body_json["smartgen"].value("fallback", false)) << mode << ": " << got.body;
  }
  // /health still answers 200 (requests are served) and says the prefill pool is down.
  EXPECT_TRUE(testing::WaitFor([&] {
    const auto h = testing::Get(server_->port(), "/health");
    return h.status == 200 && h.body_json.value("status", "") == "degraded" &&
           h.body_json["prefill"].value("up", -1) == 0;
  })) << testing::Get(server_->port(), "/health").body;
}

// The sampling fields beyond the basics travel to both nodes (node::GenerationSpec): every
// transfer mode draws the same tokens with them, and not the tokens drawn without them; n = 2
// through the router is one routed request (one prefill, the KV forked on the decode node),
// choice i drawn with seed + i.
TEST_F(HttpDeployment, SamplingFieldsAndChoicesWorkInEveryMode) {
  const auto prompt = Prompt(120, 4);
  auto body = [&](const char* mode, bool with_fields, int n, int seed) {
    json ext = {{"mode", mode}, {"return_token_ids", true}};
    if (std::string(mode) == "smartgen") {
      ext["options"] = {{"budget_fraction", 1.0}, {"proactive_ratio", 8.0}};
    }
    json b = {{"prompt", prompt}, {"max_tokens", 10}, {"temperature", 0.9}, {"seed", seed},
              {"n", n}, {"ignore_eos", true}, {"smartgen", ext}};
    if (with_fields) {
      b["presence_penalty"] = 0.8;
      b["frequency_penalty"] = 0.6;
      b["repetition_penalty"] = 1.3;
      b["min_p"] = 0.02;
      b["logit_bias"] = {{"40", 4.0}, {"41", -100}};
    }
    return b;
  };
  std::vector<json> outputs;
  for (const char* mode : {"colocated", "full", "layerwise", "smartgen", "auto"}) {
    const testing::HttpReply r = testing::PostJson(server_->port(), "/v1/completions",
                                                   body(mode, true, 2, 11));
    ASSERT_EQ(r.status, 200) << mode << ": " << r.body;
    ASSERT_EQ(r.body_json["choices"].size(), 2u) << mode;
    outputs.push_back(r.body_json["smartgen"]["choices_token_ids"]);
    ASSERT_EQ(outputs.back().size(), 2u);
    EXPECT_EQ(outputs.back()[0].size(), 10u) << mode;
    for (const json& id : outputs.back()[0]) EXPECT_NE(id, 41) << mode;  // bias -100
  }
  for (std::size_t i = 1; i < outputs.size(); ++i) EXPECT_EQ(outputs[i], outputs[0]) << i;
  // Choice 1 is the single request with seed + 1; the plain request draws other tokens.
  const testing::HttpReply one =
      testing::PostJson(server_->port(), "/v1/completions", body("layerwise", true, 1, 12));
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(one.body_json["smartgen"]["token_ids"], outputs[0][1]);
  const testing::HttpReply plain =
      testing::PostJson(server_->port(), "/v1/completions", body("layerwise", false, 1, 11));
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_NE(plain.body_json["smartgen"]["token_ids"], outputs[0][0]);
}

// A stream of n = 3 choices through the router: every chunk names its choice's index as
// OpenAI's do, each choice has its own tokens, log-probabilities and finish_reason, and the
// usage counts the prompt once.
TEST_F(HttpDeployment, StreamedChoicesNameTheirIndexInFullAndSmartgen) {
  const auto prompt = Prompt(90, 8);
  for (const char* mode : {"full", "smartgen"}) {
    SCOPED_TRACE(mode);
    json ext = {{"mode", mode}};
    if (std::string(mode) == "smartgen") {
      ext["options"] = {{"budget_fraction", 1.0}, {"proactive_ratio", 8.0}};
    }
    const json body = {{"prompt", prompt}, {"max_tokens", 6},
                       {"temperature", 0}, {"n", 3},
                       {"logprobs", 1},    {"ignore_eos", true},
                       {"stream", true},   {"stream_options", {{"include_usage", true}}},
                       {"smartgen", ext}};
    const testing::StreamReply r = testing::PostStream(server_->port(), "/v1/completions", body);
    ASSERT_EQ(r.status, 200) << r.raw.substr(0, 400);
    EXPECT_TRUE(r.done_last);
    std::vector<std::string> text(3);
    std::vector<int> logprobs(3, 0);
    std::vector<std::string> finish(3);
    json usage;
    for (const json& chunk : r.chunks) {
      if (chunk.contains("usage") && !chunk["usage"].is_null()) usage = chunk["usage"];
      for (const json& c : chunk.value("choices", json::array())) {
        const int i = c["index"].get<int>();
        ASSERT_TRUE(i >= 0 && i < 3) << chunk.dump();
        text[i] += c.value("text", "");
        if (c.contains("logprobs") && c["logprobs"].is_object()) {
          logprobs[i] += static_cast<int>(c["logprobs"]["tokens"].size());
        }
        if (c.contains("finish_reason") && c["finish_reason"].is_string())
          finish[i] = c["finish_reason"];
      }
    }
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(text[i], text[0]) << "choice " << i;  // greedy: the same answer
      EXPECT_EQ(logprobs[i], 6) << "choice " << i;
      EXPECT_EQ(finish[i], "length") << "choice " << i;
    }
    ASSERT_TRUE(usage.is_object()) << r.raw.substr(0, 400);
    EXPECT_EQ(usage["prompt_tokens"], 90);
    EXPECT_EQ(usage["completion_tokens"], 18);
  }
}

// logprobs through the router: token 1's come from the prefill node (over the KV link), the
// rest from the decode node; every mode reports the same numbers, and greedy picks the top one.
TEST_F(HttpDeployment, LogprobsComeBackThroughTheRouterInEveryMode) {
  const auto prompt = Prompt(100, 6);
  std::vector<double> reference;
  for (const char* mode : {"colocated", "full", "layerwise", "smartgen", "auto"}) {
    json ext = {{"mode", mode}};
    if (std::string(mode) == "smartgen") {
      ext["options"] = {{"budget_fraction", 1.0}, {"proactive_ratio", 8.0}};
    }
    const testing::HttpReply r = testing::PostJson(
        server_->port(), "/v1/completions",
        {{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}, {"logprobs", 3},
         {"ignore_eos", true}, {"smartgen", ext}});
    ASSERT_EQ(r.status, 200) << mode << ": " << r.body;
    const json& lp = r.body_json["choices"][0]["logprobs"];
    ASSERT_EQ(lp["token_logprobs"].size(), 8u) << mode << ": " << r.body;
    std::vector<double> got;
    for (std::size_t i = 0; i < 8; ++i) {
      const double chosen = lp["token_logprobs"][i];
      double best = -1e30;
      for (const auto& [piece, v] : lp["top_logprobs"][i].items()) best = std::max(best, v.get<double>());
      EXPECT_NEAR(best, chosen, 1e-6) << mode << " token " << i;  // greedy: the most likely
      got.push_back(chosen);
    }
    if (reference.empty()) reference = got;
    for (std::size_t i = 0; i < 8; ++i) EXPECT_NEAR(got[i], reference[i], 1e-3) << mode << " " << i;
  }
}

// Every /metrics endpoint of a deployment (the API server in front of the router, each prefill
// and decode node) passes `promtool check metrics` (Debian's prometheus package), and carries
// what a Grafana board needs: model_name, process metrics, build info, the length histograms,
// finish reasons and the nodes' KV capacity and usage.
TEST_F(HttpDeployment, EveryMetricsEndpointPassesPromtool) {
  if (std::system("command -v promtool > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "promtool not installed (Debian package prometheus; scripts/setup.sh)";
  }
  ASSERT_EQ(testing::PostJson(server_->port(), "/v1/completions", Body(Prompt(40, 2), 4,
                                                                       "layerwise", false))
                .status,
            200);
  std::vector<std::pair<std::string, std::string>> endpoints = {
      {"server", server_->MetricsText()}};
  for (auto& p : prefills_) {
    endpoints.emplace_back("prefill", testing::Get(p->http_port(), "/metrics").body);
  }
  for (auto& d : decodes_) {
    endpoints.emplace_back("decode", testing::Get(d->http_port(), "/metrics").body);
  }
  for (const auto& [role, text] : endpoints) {
    SCOPED_TRACE(role);
    ASSERT_FALSE(text.empty());
    const std::string path = ::testing::TempDir() + "/metrics_" + role + ".txt";
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
    const std::string cmd = "promtool check metrics < " + path + " > " + path + ".out 2>&1";
    const int rc = std::system(cmd.c_str());
    std::string out;
    if (std::FILE* o = std::fopen((path + ".out").c_str(), "r")) {
      char buf[4096];
      std::size_t n;
      while ((n = std::fread(buf, 1, sizeof(buf), o)) > 0) out.append(buf, n);
      std::fclose(o);
    }
    EXPECT_EQ(rc, 0) << out;
    EXPECT_TRUE(out.empty()) << out;  // no lint findings either
    for (const char* name : {"process_start_time_seconds", "process_resident_memory_bytes",
                             "process_cpu_seconds_total", "process_open_fds",
                             "smartgen_build_info{"}) {
      EXPECT_NE(text.find(name), std::string::npos) << name;
    }
  }
  for (std::size_t i = 1; i < endpoints.size(); ++i) {
    const std::string prefix = "smartgen_" + endpoints[i].first;
    for (const char* suffix : {"_kv_usage_ratio{model_name=", "_kv_capacity_bytes{model_name=",
                               "_kv_blocks_capacity{model_name=", "_kv_blocks_used "}) {
      EXPECT_NE(endpoints[i].second.find(prefix + suffix), std::string::npos) << prefix << suffix;
    }
    EXPECT_EQ(endpoints[i].second.find("_gbps"), std::string::npos);  // base units only
  }
  const std::string& server = endpoints[0].second;
  for (const char* series : {"smartgen_server_request_prompt_tokens_bucket{model_name=",
                             "smartgen_server_request_generation_tokens_count{model_name=",
                             "smartgen_server_request_success_total{model_name=",
                             "finish_reason=\"length\"", "smartgen_server_requests_queued{",
                             "smartgen_server_queue_seconds_count{"}) {
    EXPECT_NE(server.find(series), std::string::npos) << series;
  }
}

}  // namespace
}  // namespace smartgen::server
