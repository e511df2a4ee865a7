// The HTTP server against the scripted backend: OpenAI response shapes, streaming, usage,
// stop sequences, UTF-8, the smartgen extension, and the side routes.
#include "server/http_server.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "tokenizer/utf8.h"

namespace smartgen::server::testing {
namespace {

TEST(HttpServer, CompletionReturnsTextUsageAndStats) {
  ScriptedServer s;
  Script script;
  script.tokens = TokensOf("Hello world");
  script.stats = {{"ttft_ms", 1.5}, {"mode", "colocated"}};
  s.backend().SetScript(script);
  const HttpReply r = PostJson(s.port(), "/v1/completions",
                               {{"prompt", "Say hi"}, {"max_tokens", 5}, {"temperature", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  const json& b = r.body_json;
  EXPECT_EQ(b["object"], "text_completion");
  EXPECT_EQ(b["model"], "scripted");
  EXPECT_TRUE(b["id"].get<std::string>().starts_with("cmpl-"));
  EXPECT_TRUE(b["created"].is_number_integer());
  ASSERT_EQ(b["choices"].size(), 1u);
  EXPECT_EQ(b["choices"][0]["text"], "Hello");
  EXPECT_EQ(b["choices"][0]["index"], 0);
  EXPECT_TRUE(b["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(b["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(b["usage"]["prompt_tokens"], 6);  // byte vocabulary: one token per byte, no BOS
  EXPECT_EQ(b["usage"]["completion_tokens"], 5);
  EXPECT_EQ(b["usage"]["total_tokens"], 11);
  EXPECT_EQ(b["smartgen"]["ttft_ms"], 1.5);
  EXPECT_EQ(b["smartgen"]["mode"], "colocated");
  EXPECT_TRUE(b["smartgen"]["server"]["ttft_ms"].is_number());
  EXPECT_TRUE(b["smartgen"]["server"]["ttst_ms"].is_number());
  EXPECT_FALSE(b["smartgen"].contains("token_ids"));

  const GenerationRequest g = s.backend().last_request();
  EXPECT_EQ(g.prompt, TokensOf("Say hi"));
  EXPECT_EQ(g.max_tokens, 5);
  EXPECT_EQ(g.sampling.temperature, 0.0f);
  EXPECT_EQ(g.request_id, b["id"]);
}

TEST(HttpServer, TokenPromptsAndSamplingReachTheBackend) {
  ScriptedServer s;
  const HttpReply r = PostJson(s.port(), "/v1/completions",
                               {{"prompt", {1, 2, 300}},
                                {"max_tokens", 3},
                                {"temperature", 0.7},
                                {"top_p", 0.9},
                                {"top_k", 40},
                                {"seed", 1234},
                                {"user", "someone"},
                                {"some_future_field", {{"x", 1}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  const GenerationRequest g = s.backend().last_request();
  EXPECT_EQ(g.prompt, (std::vector<std::int32_t>{1, 2, 300}));
  EXPECT_FLOAT_EQ(g.sampling.temperature, 0.7f);
  EXPECT_FLOAT_EQ(g.sampling.top_p, 0.9f);
  EXPECT_EQ(g.sampling.top_k, 40);
  EXPECT_EQ(g.sampling.seed, 1234u);
  EXPECT_EQ(g.transfer_mode, "");
  EXPECT_TRUE(g.extension.is_null());
  EXPECT_EQ(r.body_json["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(r.body_json["choices"][0]["text"], ExpectedDefaultText(g.prompt, 3));
}

TEST(HttpServer, ChatAppliesTheTemplateAndEndsAtEog) {
  ScriptedServer s;
  Script script;
  script.tokens = TokensOf("Hi there");
  script.tokens.push_back(kEos);
  s.backend().SetScript(script);
  const json messages = {{{"role", "system"}, {"content", "Be brief."}},
                         {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "hello"}}}}}};
  const HttpReply r = PostJson(s.port(), "/v1/chat/completions",
                               {{"model", "scripted"}, {"messages", messages}, {"max_tokens", 50}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json& b = r.body_json;
  EXPECT_EQ(b["object"], "chat.completion");
  EXPECT_TRUE(b["id"].get<std::string>().starts_with("chatcmpl-"));
  EXPECT_EQ(b["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(b["choices"][0]["message"]["content"], "Hi there");
  EXPECT_EQ(b["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(b["usage"]["completion_tokens"], 9);  // the EOS token counts

  const tokenizer::Tokenizer& tok = s.backend().tokenizer();
  const std::vector<tokenizer::ChatMessage> expected_messages = {{"system", "Be brief."},
                                                                 {"user", "hello"}};
  const std::string prompt = *tok.ApplyChatTemplate(expected_messages, true);
  const std::vector<std::int32_t> expected = tok.Encode(prompt, true, true);
  EXPECT_EQ(s.backend().last_request().prompt, expected);
  EXPECT_EQ(b["usage"]["prompt_tokens"], expected.size());
  EXPECT_EQ(expected.front(), 257);  // <|im_start|> parsed as the special token
}

TEST(HttpServer, ChatDefaultsMaxTokensToTheRestOfTheContext) {
  ScriptedServer s({}, /*context_length=*/128);
  Script script;
  script.tokens = TokensOf("ok");
  s.backend().SetScript(script);
  const HttpReply r = PostJson(s.port(), "/v1/chat/completions",
                               {{"messages", {{{"role", "user"}, {"content", "x"}}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  const int n_prompt = r.body_json["usage"]["prompt_tokens"];
  EXPECT_EQ(s.backend().last_request().max_tokens, 128 - n_prompt);
  // max_completion_tokens wins over max_tokens.
  ASSERT_EQ(PostJson(s.port(), "/v1/chat/completions",
                     {{"messages", {{{"role", "user"}, {"content", "x"}}}},
                      {"max_tokens", 7},
                      {"max_completion_tokens", 3}})
                .status,
            200);
  EXPECT_EQ(s.backend().last_request().max_tokens, 3);
}

TEST(HttpServer, StreamedCompletionMatchesTheNonStreamedOne) {
  ScriptedServer s;
  const json request = {{"prompt", "abc"}, {"max_tokens", 12}};
  const HttpReply whole = PostJson(s.port(), "/v1/completions", request);
  ASSERT_EQ(whole.status, 200);
  json streamed_request = request;
  streamed_request["stream"] = true;
  const StreamReply r = PostStream(s.port(), "/v1/completions", streamed_request);
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.content_type, "text/event-stream");
  EXPECT_EQ(r.Text(), whole.body_json["choices"][0]["text"]);
  EXPECT_EQ(r.done_count, 1);
  EXPECT_TRUE(r.done_last);
  ASSERT_EQ(r.chunks.size(), 13u);  // one per token, then the finish chunk
  const std::string id = r.chunks[0]["id"];
  for (std::size_t i = 0; i < r.chunks.size(); ++i) {
    const json& c = r.chunks[i];
    EXPECT_EQ(c["object"], "text_completion");
    EXPECT_EQ(c["id"], id);
    EXPECT_EQ(c["model"], "scripted");
    EXPECT_FALSE(c.contains("usage"));
    const json& finish = c["choices"][0]["finish_reason"];
    if (i + 1 < r.chunks.size()) {
      EXPECT_TRUE(finish.is_null());
      EXPECT_EQ(c["choices"][0]["text"].get<std::string>().size(), 1u);
      EXPECT_FALSE(c.contains("smartgen"));
    } else {
      EXPECT_EQ(finish, "length");
      EXPECT_EQ(c["choices"][0]["text"], "");
      EXPECT_TRUE(c["smartgen"]["server"]["ttft_ms"].is_number());
    }
  }
}

TEST(HttpServer, StreamedChatHasRoleDeltasFinishAndUsageChunks) {
  ScriptedServer s;
  Script script;
  script.tokens = TokensOf("Yes!");
  script.tokens.push_back(kEos);
  s.backend().SetScript(script);
  const StreamReply r = PostStream(s.port(), "/v1/chat/completions",
                                   {{"messages", {{{"role", "user"}, {"content", "Well?"}}}},
                                    {"stream", true},
                                    {"stream_options", {{"include_usage", true}}},
                                    {"smartgen", {{"return_token_ids", true}}}});
  ASSERT_EQ(r.status, 200) << r.raw;
  ASSERT_EQ(r.chunks.size(), 7u);  // role, 4 content deltas, finish, usage
  EXPECT_TRUE(r.done_last);
  EXPECT_EQ(r.chunks[0]["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
  for (const json& c : r.chunks) {
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    ASSERT_TRUE(c.contains("usage"));
  }
  EXPECT_EQ(r.chunks[1]["choices"][0]["delta"], json({{"content", "Y"}}));
  EXPECT_TRUE(r.chunks[1]["usage"].is_null());
  EXPECT_EQ(r.Text(), "Yes!");
  const json& finish = r.chunks[5];
  EXPECT_EQ(finish["choices"][0]["delta"], json::object());
  EXPECT_EQ(finish["choices"][0]["finish_reason"], "stop");
  const json& usage = r.chunks[6];
  EXPECT_EQ(usage["choices"], json::array());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 5);
  EXPECT_EQ(usage["usage"]["total_tokens"], usage["usage"]["prompt_tokens"].get<int>() + 5);
  std::vector<std::int32_t> ids = TokensOf("Yes!");
  ids.push_back(kEos);
  EXPECT_EQ(usage["smartgen"]["token_ids"], json(ids));
}

TEST(HttpServer, StopSequencesCutTheTextAndCancelGeneration) {
  ScriptedServer s;
  Script script;
  script.tokens = TokensOf("Hello, world! And more text after the stop.");
  script.token_delay = core::Millis(1);  // the cancel lands while tokens remain
  s.backend().SetScript(script);
  const json request = {{"prompt", "p"}, {"max_tokens", 100}, {"stop", {"zzz", "d! A"}}};
  const HttpReply r = PostJson(s.port(), "/v1/completions", request);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body_json["choices"][0]["text"], "Hello, worl");
  EXPECT_EQ(r.body_json["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r.body_json["usage"]["completion_tokens"], 15);  // through the stop's last byte
  EXPECT_EQ(s.backend().cancellations(), 1);

  json streamed = request;
  streamed["stream"] = true;
  streamed["stop"] = ", w";
  const StreamReply st = PostStream(s.port(), "/v1/completions", streamed);
  ASSERT_EQ(st.status, 200);
  EXPECT_EQ(st.Text(), "Hello");
  for (const json& c : st.chunks) {  // the partial ", " was held back, never sent
    EXPECT_EQ(c["choices"][0]["text"].get<std::string>().find(','), std::string::npos);
  }
  EXPECT_EQ(st.chunks.back()["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(WaitFor([&] { return s.backend().cancellations() == 2; }));
}

TEST(HttpServer, StreamedDeltasNeverSplitUtf8Characters) {
  ScriptedServer s;
  const std::string text = "héllo 🚀 中文 ok";
  Script script;
  script.tokens = TokensOf(text);  // one token per byte: characters arrive in pieces
  s.backend().SetScript(script);
  const StreamReply r = PostStream(s.port(), "/v1/chat/completions",
                                   {{"messages", {{{"role", "user"}, {"content", "x"}}}},
                                    {"max_tokens", 100},
                                    {"stream", true}});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.Text(), text);
  EXPECT_EQ(r.raw.find("\xEF\xBF\xBD"), std::string::npos);  // no U+FFFD anywhere
  int deltas = 0;
  for (const json& c : r.chunks) {
    if (!c["choices"][0]["delta"].contains("content")) continue;
    const std::string d = c["choices"][0]["delta"]["content"];
    EXPECT_TRUE(tokenizer::IsValidUtf8(d)) << d;
    if (!d.empty()) ++deltas;
  }
  EXPECT_EQ(deltas, 13);  // one per character: h é l l o ␠ 🚀 ␠ 中 文 ␠ o k
  const HttpReply whole =
      PostJson(s.port(), "/v1/completions", {{"prompt", "x"}, {"max_tokens", 100}});
  EXPECT_EQ(whole.body_json["choices"][0]["text"], text);
  EXPECT_EQ(whole.body_json["usage"]["completion_tokens"], text.size());
}

TEST(HttpServer, InvalidUtf8FromTheModelBecomesReplacementCharacters) {
  ScriptedServer s;
  Script script;
  script.tokens = {'a', 0xE2, 0x82, 'b', 0xFF};  // a truncated 3-byte character, a stray byte
  s.backend().SetScript(script);
  const HttpReply r = PostJson(s.port(), "/v1/completions", {{"prompt", "x"}, {"max_tokens", 9}});
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string text = r.body_json["choices"][0]["text"];
  EXPECT_TRUE(tokenizer::IsValidUtf8(text));
  EXPECT_EQ(text.front(), 'a');
  EXPECT_NE(text.find('b'), std::string::npos);
  const StreamReply st = PostStream(s.port(), "/v1/completions",
                                    {{"prompt", "x"}, {"max_tokens", 9}, {"stream", true}});
  ASSERT_EQ(st.status, 200);
  EXPECT_TRUE(st.done_last);
  EXPECT_TRUE(tokenizer::IsValidUtf8(st.Text()));
}

TEST(HttpServer, SmartgenExtensionIsValidatedAndPassedThrough) {
  ScriptedServer s;
  const json ext = {{"mode", "layerwise"}, {"budget", 64}, {"return_token_ids", true}};
  const HttpReply r = PostJson(s.port(), "/v1/completions",
                               {{"prompt", "hi"}, {"max_tokens", 4}, {"smartgen", ext}});
  ASSERT_EQ(r.status, 200) << r.body;
  const GenerationRequest g = s.backend().last_request();
  EXPECT_EQ(g.transfer_mode, "layerwise");
  EXPECT_EQ(g.extension, ext);
  EXPECT_EQ(r.body_json["smartgen"]["token_ids"], json(TokensOf(ExpectedDefaultText(g.prompt, 4))));
  const HttpReply bad = PostJson(s.port(), "/v1/completions",
                                 {{"prompt", "hi"}, {"smartgen", {{"mode", "teleport"}}}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body_json["error"]["param"], "smartgen.mode");
}

TEST(HttpServer, ModelsHealthAndMetricsRoutes) {
  ScriptedServer s;
  const HttpReply models = Get(s.port(), "/v1/models");
  ASSERT_EQ(models.status, 200);
  EXPECT_EQ(models.body_json["object"], "list");
  EXPECT_EQ(models.body_json["data"][0]["id"], "scripted");
  EXPECT_EQ(models.body_json["data"][0]["object"], "model");
  EXPECT_EQ(models.body_json["data"][0]["max_model_len"], 4096);

  const HttpReply health = Get(s.port(), "/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body_json["status"], "ok");
  s.backend().SetHealth(Unavailable("no decode node"));
  const HttpReply sick = Get(s.port(), "/health");
  EXPECT_EQ(sick.status, 503);
  EXPECT_EQ(sick.body_json["error"]["message"], "no decode node");

  ASSERT_EQ(PostJson(s.port(), "/v1/completions", {{"prompt", "x"}, {"max_tokens", 3}}).status,
            200);
  const HttpReply metrics = Get(s.port(), "/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_TRUE(metrics.content_type.starts_with("text/plain"));
  const auto m = ParseMetrics(metrics.body);
  EXPECT_EQ(Metric(m, "smartgen_server_requests_total{endpoint=\"completions\",outcome=\"ok\"}"),
            1);
  EXPECT_EQ(Metric(m, "smartgen_server_generation_tokens_total"), 3);
  EXPECT_EQ(Metric(m, "smartgen_server_prompt_tokens_total"), 1);
  EXPECT_EQ(Metric(m, "smartgen_server_ttft_seconds_count"), 1);
  EXPECT_EQ(Metric(m, "smartgen_server_ttst_seconds_count"), 1);
  EXPECT_EQ(Metric(m, "smartgen_server_tbt_seconds_count"), 1);
  EXPECT_EQ(Metric(m, "smartgen_server_requests_in_flight"), 0);
  EXPECT_EQ(Metric(m, "scripted_backend_calls_total"), 1);  // the backend's own metrics
}

}  // namespace
}  // namespace smartgen::server::testing
