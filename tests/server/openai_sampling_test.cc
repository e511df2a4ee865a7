// The sampling and API fields beyond the basics over HTTP, on a real (tiny, synthetic) model
// through ModelBackend: logprobs and top_logprobs (completions and chat, streamed or not),
// n > 1 from one prefill, penalties / min_p / logit_bias as the engine computes them,
// ignore_eos, echo, /tokenize, /detokenize, /v1/models/{id} and served-model aliases.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "core/thread_pool.h"
#include "kv/block_pool.h"
#include "kv/sequence_kv.h"
#include "model/forward.h"
#include "model/generate.h"
#include "model/presets.h"
#include "model/synthetic_model.h"
#include "server/http_server.h"
#include "server/model_backend.h"
#include "test_util.h"
#include "tokenizer/utf8.h"

namespace smartgen::server::testing {
namespace {

class OpenAiSamplingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model::SyntheticModelSpec spec;
    spec.preset = *model::FindPreset("tiny");
    spec.out = ::testing::TempDir() + "/sampling_tiny.gguf";
    const Status written = model::WriteSyntheticModel(spec);
    ASSERT_TRUE(written.ok()) << written.ToString();
    ModelBackendOptions options;
    options.threads = 1;
    options.context_length = 256;
    Result<std::unique_ptr<ModelBackend>> backend = ModelBackend::Load(spec.out, options);
    ASSERT_TRUE(backend.ok()) << backend.status().ToString();
    backend_ = std::move(*backend);
    // The reference engine: model::Generate in its own model instance.
    Result<std::unique_ptr<model::Model>> m = model::Model::Load(spec.out);
    ASSERT_TRUE(m.ok());
    model_ = std::move(*m);
    pool_ = std::make_unique<core::ThreadPool>(1);
    model::ForwardOptions fo;
    fo.max_context = 256;
    forward_ = std::make_unique<model::Forward>(*model_, pool_.get(), fo);
    const kv::KvGeometry g = forward_->KvGeometryFor(kv::KvDType::kF16, 16);
    blocks_ = std::make_unique<kv::BlockPool>(g, g.BlocksFor(256) * g.n_layers * g.n_kv_heads);
  }
  static void TearDownTestSuite() {
    forward_.reset();
    pool_.reset();
    blocks_.reset();
    model_.reset();
    backend_.reset();
  }

  void SetUp() override {
    ASSERT_NE(backend_, nullptr);
    HttpServerOptions options;
    options.keep_alive_timeout_s = 1;
    options.served_model_names = {"tiny", "org/tiny-alias"};
    server_ = std::make_unique<HttpServer>(backend_.get(), options);
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override { server_->Stop(); }

  std::vector<std::int32_t> Prompt(const std::string& text) {
    return backend_->tokenizer().Encode(text, true, true);
  }
  // What model::Generate (not the server, not ModelBackend) produces.
  static std::vector<std::int32_t> Reference(const std::vector<std::int32_t>& prompt, int n,
                                             const model::SamplingParams& p,
                                             bool stop_at_eog = true) {
    kv::SequenceKv seq(blocks_.get());
    model::GenerateOptions o;
    o.max_tokens = n;
    o.sampling = p;
    o.stop_at_eog = stop_at_eog;
    auto r = model::Generate(*forward_, seq, prompt, o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::vector<std::int32_t>{};
  }
  HttpReply Complete(json body) {
    body["smartgen"] = {{"return_token_ids", true}};
    return PostJson(server_->port(), "/v1/completions", body);
  }

  inline static std::unique_ptr<ModelBackend> backend_;
  inline static std::unique_ptr<model::Model> model_;
  inline static std::unique_ptr<core::ThreadPool> pool_;
  inline static std::unique_ptr<model::Forward> forward_;
  inline static std::unique_ptr<kv::BlockPool> blocks_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(OpenAiSamplingTest, CompletionLogprobsHaveOpenAisShape) {
  const HttpReply r =
      Complete({{"prompt", "Once upon"}, {"max_tokens", 6}, {"temperature", 0}, {"logprobs", 3}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json& choice = r.body_json["choices"][0];
  const json& lp = choice["logprobs"];
  ASSERT_TRUE(lp.is_object()) << r.body;
  const std::size_t n = r.body_json["usage"]["completion_tokens"];
  ASSERT_EQ(lp["tokens"].size(), n);
  ASSERT_EQ(lp["token_logprobs"].size(), n);
  ASSERT_EQ(lp["top_logprobs"].size(), n);
  ASSERT_EQ(lp["text_offset"].size(), n);
  const json ids = r.body_json["smartgen"]["token_ids"];
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double chosen = lp["token_logprobs"][i];
    EXPECT_LE(chosen, 0.0);
    // Greedy: the chosen token is the most likely, so no alternative beats it.
    const json& top = lp["top_logprobs"][i];
    EXPECT_GE(top.size(), 1u);
    EXPECT_LE(top.size(), 4u);  // top 3 and the chosen one
    for (const auto& [piece, value] : top.items()) EXPECT_LE(value.get<double>(), chosen + 1e-6);
    // A piece that is part of a UTF-8 character reaches JSON as U+FFFD.
    const std::string piece(backend_->tokenizer().TokenToPiece(ids[i].get<std::int32_t>()));
    if (tokenizer::IsValidUtf8(piece)) {
      EXPECT_EQ(lp["tokens"][i], piece);
    }
    EXPECT_EQ(lp["text_offset"][i], offset);
    offset += static_cast<std::int64_t>(
        backend_->tokenizer().TokenToPiece(ids[i].get<std::int32_t>(), false).size());
  }
}

TEST_F(OpenAiSamplingTest, ChatLogprobsStreamedEqualNonStreamed) {
  json body = {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
               {"max_tokens", 5},
               {"temperature", 0},
               {"logprobs", true},
               {"top_logprobs", 2}};
  const HttpReply whole = PostJson(server_->port(), "/v1/chat/completions", body);
  ASSERT_EQ(whole.status, 200) << whole.body;
  const json content = whole.body_json["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), whole.body_json["usage"]["completion_tokens"]);
  for (const json& e : content) {
    ASSERT_EQ(e["top_logprobs"].size(), 2u);
    EXPECT_EQ(e["top_logprobs"][0]["logprob"], e["logprob"]);  // greedy: the best
    EXPECT_TRUE(e["bytes"].is_array());
    EXPECT_LE(e["top_logprobs"][1]["logprob"].get<double>(), e["logprob"].get<double>());
  }
  body["stream"] = true;
  const StreamReply st = PostStream(server_->port(), "/v1/chat/completions", body);
  ASSERT_EQ(st.status, 200);
  json streamed = json::array();
  for (const json& c : st.chunks) {
    if (c["choices"].empty()) continue;
    const json& lp = c["choices"][0]["logprobs"];
    if (lp.is_object()) {
      for (const json& e : lp["content"]) streamed.push_back(e);
    }
  }
  EXPECT_EQ(streamed, content);
}

TEST_F(OpenAiSamplingTest, NChoicesForkThePrefillAndMatchSingleRequests) {
  const json body = {
      {"prompt", "In a land"}, {"max_tokens", 8}, {"temperature", 1.0}, {"seed", 40}, {"n", 3}};
  const HttpReply r = Complete(body);
  ASSERT_EQ(r.status, 200) << r.body;
  const json& choices = r.body_json["choices"];
  ASSERT_EQ(choices.size(), 3u);
  EXPECT_EQ(r.body_json["smartgen"]["choices"], 3);
  const json all = r.body_json["smartgen"]["choices_token_ids"];
  ASSERT_EQ(all.size(), 3u);
  std::int64_t total = 0;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(choices[i]["index"], i);
    // Choice i samples with seed + i: what a single request with that seed generates.
    model::SamplingParams p{1.0f, 0, 1.0f, static_cast<std::uint64_t>(40 + i)};
    EXPECT_EQ(all[i], json(Reference(Prompt("In a land"), 8, p))) << i;
    total += static_cast<std::int64_t>(all[i].size());
  }
  EXPECT_EQ(r.body_json["usage"]["completion_tokens"], total);
  EXPECT_NE(all[0], all[1]);  // different seeds, different samples (8 tokens at T = 1)

  json streamed_body = body;
  streamed_body["stream"] = true;
  const StreamReply st = PostStream(server_->port(), "/v1/completions", streamed_body);
  ASSERT_EQ(st.status, 200);
  std::vector<std::string> texts(3);
  std::vector<int> finishes(3);
  for (const json& c : st.chunks) {
    for (const json& ch : c["choices"]) {
      texts[ch["index"].get<int>()] += ch["text"].get<std::string>();
      if (!ch["finish_reason"].is_null()) ++finishes[ch["index"].get<int>()];
    }
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(texts[i], choices[i]["text"]) << i;
    EXPECT_EQ(finishes[i], 1) << i;
  }
}

TEST_F(OpenAiSamplingTest, PenaltiesMinPAndLogitBiasAreWhatTheEngineComputes) {
  const std::vector<std::int32_t> prompt = Prompt("the the the the");
  model::SamplingParams p{0.8f, 0, 1.0f, 5};
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 1.0f;
  p.repetition_penalty = 1.3f;
  p.min_p = 0.05f;
  p.logit_bias = {{7, 3.0f}, {12, -100.0f}};
  const HttpReply r = Complete({{"prompt", "the the the the"},
                                {"max_tokens", 10},
                                {"temperature", 0.8},
                                {"seed", 5},
                                {"presence_penalty", 0.5},
                                {"frequency_penalty", 1.0},
                                {"repetition_penalty", 1.3},
                                {"min_p", 0.05},
                                {"logit_bias", {{"7", 3.0}, {"12", -100}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body_json["smartgen"]["token_ids"], json(Reference(prompt, 10, p)));
  // And they matter: the plain request differs.
  model::SamplingParams plain{0.8f, 0, 1.0f, 5};
  EXPECT_NE(Reference(prompt, 10, plain), Reference(prompt, 10, p));

  // Greedy with a huge presence penalty never repeats a token.
  const HttpReply g = Complete(
      {{"prompt", "abc"}, {"max_tokens", 12}, {"temperature", 0}, {"presence_penalty", 2}});
  ASSERT_EQ(g.status, 200);
  std::vector<int> ids = g.body_json["smartgen"]["token_ids"];
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end()) << g.body;
}

TEST_F(OpenAiSamplingTest, IgnoreEosAndEcho) {
  const std::int32_t eos = backend_->tokenizer().eos_id();
  const std::string bias = std::to_string(eos);
  const HttpReply stops = Complete(
      {{"prompt", "x"}, {"max_tokens", 5}, {"temperature", 0}, {"logit_bias", {{bias, 100}}}});
  ASSERT_EQ(stops.status, 200) << stops.body;
  EXPECT_EQ(stops.body_json["usage"]["completion_tokens"], 1);
  EXPECT_EQ(stops.body_json["choices"][0]["finish_reason"], "stop");
  const HttpReply goes_on = Complete({{"prompt", "x"},
                                      {"max_tokens", 5},
                                      {"temperature", 0},
                                      {"ignore_eos", true},
                                      {"logit_bias", {{bias, 100}}}});
  ASSERT_EQ(goes_on.status, 200) << goes_on.body;
  EXPECT_EQ(goes_on.body_json["usage"]["completion_tokens"], 5);
  EXPECT_EQ(goes_on.body_json["choices"][0]["finish_reason"], "length");

  const HttpReply plain =
      Complete({{"prompt", "Hello there"}, {"max_tokens", 4}, {"temperature", 0}});
  const HttpReply echo =
      Complete({{"prompt", "Hello there"}, {"max_tokens", 4}, {"temperature", 0}, {"echo", true}});
  ASSERT_EQ(echo.status, 200) << echo.body;
  EXPECT_EQ(echo.body_json["choices"][0]["text"].get<std::string>(),
            "Hello there" + plain.body_json["choices"][0]["text"].get<std::string>());
  const StreamReply st = PostStream(server_->port(), "/v1/completions",
                                    {{"prompt", "Hello there"},
                                     {"max_tokens", 4},
                                     {"temperature", 0},
                                     {"echo", true},
                                     {"stream", true}});
  EXPECT_EQ(st.Text(), echo.body_json["choices"][0]["text"]);
}

TEST_F(OpenAiSamplingTest, TokenizeDetokenizeAndModels) {
  const HttpReply t = PostJson(server_->port(), "/tokenize",
                               {{"prompt", "Hello world"}, {"return_token_strs", true}});
  ASSERT_EQ(t.status, 200) << t.body;
  EXPECT_EQ(t.body_json["tokens"], json(Prompt("Hello world")));
  EXPECT_EQ(t.body_json["count"], t.body_json["tokens"].size());
  EXPECT_EQ(t.body_json["max_model_len"], 256);
  EXPECT_EQ(t.body_json["token_strs"].size(), t.body_json["tokens"].size());
  const HttpReply d =
      PostJson(server_->port(), "/detokenize",
               {{"tokens", backend_->tokenizer().Encode("Hello world", false, false)}});
  ASSERT_EQ(d.status, 200) << d.body;
  EXPECT_EQ(d.body_json["prompt"], "Hello world");
  const HttpReply chat = PostJson(server_->port(), "/tokenize",
                                  {{"messages", {{{"role", "user"}, {"content", "hi"}}}}});
  ASSERT_EQ(chat.status, 200) << chat.body;
  EXPECT_GT(chat.body_json["count"].get<int>(), 1);
  EXPECT_EQ(PostJson(server_->port(), "/detokenize", {{"tokens", {1 << 30}}}).status, 400);
  EXPECT_EQ(PostJson(server_->port(), "/tokenize", {{"prompt", 5}}).body_json["error"]["param"],
            "prompt");
  EXPECT_EQ(PostJson(server_->port(), "/tokenize", {{"prompt", "x"}, {"model", "nope"}}).status,
            404);

  // Both aliases are listed and served; any other name is 404 as OpenAI answers it.
  const HttpReply models = Get(server_->port(), "/v1/models");
  ASSERT_EQ(models.body_json["data"].size(), 2u);
  EXPECT_EQ(models.body_json["data"][1]["id"], "org/tiny-alias");
  const HttpReply one = Get(server_->port(), "/v1/models/org/tiny-alias");
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(one.body_json["id"], "org/tiny-alias");
  EXPECT_EQ(one.body_json["object"], "model");
  const HttpReply missing = Get(server_->port(), "/v1/models/gpt-4");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body_json["error"]["code"], "model_not_found");
  const HttpReply by_alias =
      Complete({{"prompt", "x"}, {"max_tokens", 1}, {"model", "org/tiny-alias"}});
  ASSERT_EQ(by_alias.status, 200);
  EXPECT_EQ(by_alias.body_json["model"], "org/tiny-alias");
  EXPECT_EQ(Complete({{"prompt", "x"}, {"model", "gpt-4"}}).status, 404);
}

// A backend that cannot fork (features().choices false): n requests of one choice each.
TEST(OpenAiChoices, BackendWithoutForkGetsNRequests) {
  ScriptedServer s;
  s.backend().SetFeatures({.logprobs = true});
  const HttpReply r =
      PostJson(s.port(), "/v1/completions",
               {{"prompt", "ab"}, {"max_tokens", 3}, {"n", 2}, {"logprobs", 1}, {"seed", 9}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(s.backend().calls(), 2);
  ASSERT_EQ(r.body_json["choices"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const json& c = r.body_json["choices"][i];
    EXPECT_EQ(c["index"], i);
    EXPECT_EQ(c["text"], ExpectedDefaultText(TokensOf("ab"), 3));
    EXPECT_EQ(c["finish_reason"], "length");
    ASSERT_EQ(c["logprobs"]["token_logprobs"].size(), 3u);
    EXPECT_DOUBLE_EQ(c["logprobs"]["token_logprobs"][2].get<double>(), -0.75);
  }
  EXPECT_EQ(r.body_json["usage"]["completion_tokens"], 6);
  // The last call was one of the two: one choice, seed 9 or 10.
  const GenerationRequest last = s.backend().last_request();
  EXPECT_EQ(last.n, 1);
  EXPECT_TRUE(last.sampling.seed == 9 || last.sampling.seed == 10);
}

}  // namespace
}  // namespace smartgen::server::testing
