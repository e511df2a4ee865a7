// Request parsing, response shapes, error mapping and the API-key check, without sockets.
#include <gtest/gtest.h>

#include <algorithm>

#include "server/api_error.h"
#include "server/auth.h"
#include "server/openai_request.h"
#include "server/openai_response.h"

namespace smartgen::server {
namespace {

using nlohmann::json;

Result<CompletionRequest> Parse(const json& body, Endpoint endpoint = Endpoint::kCompletions,
                                std::string* param = nullptr) {
  return ParseCompletionRequest(body.dump(), endpoint, param);
}

TEST(OpenAiRequest, SamplingExtrasAreParsed) {
  auto r = Parse({{"prompt", "hi"},
                  {"n", 3},
                  {"presence_penalty", 0.5},
                  {"frequency_penalty", -1},
                  {"repetition_penalty", 1.2},
                  {"min_p", 0.1},
                  {"logit_bias", {{"7", -100}, {"42", 2.5}}},
                  {"logprobs", 4},
                  {"ignore_eos", true},
                  {"echo", true}});
  ASSERT_FALSE(r.ok());  // echo with logprobs: the prompt's logprobs are not computed
  std::string param;
  r = Parse({{"prompt", "hi"},
             {"n", 3},
             {"presence_penalty", 0.5},
             {"frequency_penalty", -1},
             {"repetition_penalty", 1.2},
             {"min_p", 0.1},
             {"logit_bias", {{"7", -100}, {"42", 2.5}}},
             {"logprobs", 4},
             {"ignore_eos", true}},
            Endpoint::kCompletions, &param);
  ASSERT_TRUE(r.ok()) << r.status().ToString() << " " << param;
  EXPECT_EQ(r->n, 3);
  EXPECT_FLOAT_EQ(r->sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r->sampling.frequency_penalty, -1.0f);
  EXPECT_FLOAT_EQ(r->sampling.repetition_penalty, 1.2f);
  EXPECT_FLOAT_EQ(r->sampling.min_p, 0.1f);
  const std::vector<std::pair<std::int32_t, float>> bias = {{42, 2.5f}, {7, -100.0f}};
  auto got = r->sampling.logit_bias;
  std::sort(got.begin(), got.end(), [](auto& a, auto& b) { return a.first > b.first; });
  EXPECT_EQ(got, bias);
  EXPECT_EQ(r->sampling.logprobs, 4);
  EXPECT_TRUE(r->ignore_eos);
  EXPECT_FALSE(r->echo);
  // Chat: logprobs is a boolean, top_logprobs the count.
  const json msgs = {{{"role", "user"}, {"content", "hi"}}};
  r = Parse({{"messages", msgs}, {"logprobs", true}, {"top_logprobs", 5}},
            Endpoint::kChatCompletions);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->sampling.logprobs, 5);
  r = Parse({{"messages", msgs}, {"logprobs", true}}, Endpoint::kChatCompletions);
  EXPECT_EQ(r->sampling.logprobs, 0);
  r = Parse({{"messages", msgs}, {"logprobs", false}}, Endpoint::kChatCompletions);
  EXPECT_EQ(r->sampling.logprobs, -1);
  // Defaults: nothing changes the logits.
  r = Parse({{"prompt", "hi"}});
  EXPECT_FALSE(r->sampling.AdjustsLogits());
  EXPECT_EQ(r->sampling.logprobs, -1);
  EXPECT_EQ(r->n, 1);
  r = Parse({{"prompt", "hi"}, {"echo", true}, {"best_of", 2}, {"n", 2}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->echo);
}

TEST(OpenAiResponse, ChoicesAndLogprobsInPlace) {
  const ResponseHeader h{Endpoint::kCompletions, "cmpl-1", 5, "m"};
  const json r = CompletionResponse(
      h, {{"a", "stop", nullptr}, {"b", "length", {{"tokens", json::array()}}}}, {3, 2}, nullptr);
  ASSERT_EQ(r["choices"].size(), 2u);
  EXPECT_EQ(r["choices"][1]["index"], 1);
  EXPECT_EQ(r["choices"][1]["text"], "b");
  EXPECT_EQ(r["choices"][1]["logprobs"]["tokens"], json::array());
  EXPECT_TRUE(r["choices"][0]["logprobs"].is_null());
  const json chunk = ChoiceChunk(h, "x", "", false, false, 3, {{"k", 1}});
  EXPECT_EQ(chunk["choices"][0]["index"], 3);
  EXPECT_EQ(chunk["choices"][0]["logprobs"]["k"], 1);
  const json models = ModelList(std::vector<std::string>{"a", "b/c"}, 5, 64);
  ASSERT_EQ(models["data"].size(), 2u);
  EXPECT_EQ(models["data"][1]["id"], "b/c");
  EXPECT_EQ(ModelCard("a", 5, 64)["max_model_len"], 64);
}

TEST(OpenAiRequest, CompletionDefaultsAndFields) {
  auto r = Parse({{"prompt", "hi"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->prompt_text, "hi");
  EXPECT_FALSE(r->prompt_is_tokens);
  EXPECT_FALSE(r->max_tokens.has_value());
  EXPECT_EQ(r->sampling.temperature, 1.0f);  // OpenAI's default
  EXPECT_EQ(r->sampling.top_p, 1.0f);
  EXPECT_EQ(r->sampling.top_k, 0);
  EXPECT_FALSE(r->seed_given);
  EXPECT_FALSE(r->stream);
  EXPECT_TRUE(r->extension.is_null());

  r = Parse({{"prompt", {{5, 6}}},
             {"model", "m"},
             {"max_tokens", 9},
             {"temperature", 0},
             {"top_k", -1},
             {"seed", -1},
             {"stop", "\n"},
             {"stream", true},
             {"stream_options", {{"include_usage", true}}},
             {"smartgen", {{"mode", "smartgen"}, {"return_token_ids", true}, {"x", 1}}}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->prompt_is_tokens);
  EXPECT_EQ(r->prompt_tokens, (std::vector<std::int32_t>{5, 6}));
  EXPECT_EQ(r->model, "m");
  EXPECT_EQ(*r->max_tokens, 9);
  EXPECT_EQ(r->sampling.temperature, 0.0f);
  EXPECT_EQ(r->sampling.top_k, 0);
  EXPECT_TRUE(r->seed_given);
  EXPECT_EQ(r->sampling.seed, ~std::uint64_t{0});
  EXPECT_EQ(r->stop, (std::vector<std::string>{"\n"}));
  EXPECT_TRUE(r->include_usage);
  EXPECT_EQ(r->transfer_mode, "smartgen");
  EXPECT_TRUE(r->return_token_ids);
  EXPECT_EQ(r->extension["x"], 1);

  r = Parse({{"prompt", {"only one"}}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->prompt_text, "only one");
}

TEST(OpenAiRequest, ChatMessages) {
  auto r = Parse(
      {{"messages",
        {{{"role", "developer"}, {"content", "rules"}},
         {{"role", "user"},
          {"content", {{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}}}},
         {{"role", "assistant"}, {"content", nullptr}}}},
       {"max_tokens", 4},
       {"max_completion_tokens", 2}},
      Endpoint::kChatCompletions);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->messages.size(), 3u);
  EXPECT_EQ(r->messages[0].role, "system");
  EXPECT_EQ(r->messages[1].content, "ab");
  EXPECT_EQ(r->messages[2].content, "");
  EXPECT_EQ(*r->max_tokens, 2);
}

TEST(OpenAiRequest, ErrorsNameTheField) {
  std::string param;
  auto r = Parse({{"prompt", "x"}, {"temperature", "warm"}}, Endpoint::kCompletions, &param);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(param, "temperature");
  EXPECT_NE(r.status().message().find("must be a number, not string"), std::string::npos);
  r = ParseCompletionRequest("{nope", Endpoint::kCompletions, &param);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(param, "");
  r = Parse({{"prompt", "x"}, {"stop", std::vector<std::string>(17, "s")}}, Endpoint::kCompletions,
            &param);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(param, "stop");
  r = Parse({{"prompt", {1ull << 40}}}, Endpoint::kCompletions, &param);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(param, "prompt");
  r = Parse({{"prompt", "x"}, {"max_tokens", 1ull << 40}}, Endpoint::kCompletions, &param);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(param, "max_tokens");
}

TEST(OpenAiResponse, Shapes) {
  const ResponseHeader chat{Endpoint::kChatCompletions, "chatcmpl-1", 100, "m"};
  const ResponseHeader text{Endpoint::kCompletions, "cmpl-1", 100, "m"};
  const Usage usage{3, 2};
  const json c = CompletionResponse(text, "hi", "length", usage, nullptr);
  EXPECT_EQ(c, json::parse(R"({"id":"cmpl-1","object":"text_completion","created":100,
      "model":"m","choices":[{"text":"hi","index":0,"logprobs":null,"finish_reason":"length"}],
      "usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}})"));
  const json cc = CompletionResponse(chat, "hi", "stop", usage, {{"k", 1}});
  EXPECT_EQ(cc["object"], "chat.completion");
  EXPECT_EQ(cc["choices"][0]["message"], json({{"role", "assistant"}, {"content", "hi"}}));
  EXPECT_EQ(cc["smartgen"]["k"], 1);
  EXPECT_EQ(ChoiceChunk(chat, "", "", true, false)["choices"][0]["delta"],
            json({{"role", "assistant"}, {"content", ""}}));
  EXPECT_EQ(ChoiceChunk(chat, "x", "", false, true)["usage"], nullptr);
  EXPECT_EQ(ChoiceChunk(chat, "", "stop", false, false)["choices"][0]["delta"], json::object());
  EXPECT_EQ(ChoiceChunk(text, "x", "", false, false)["choices"][0]["finish_reason"], nullptr);
  EXPECT_EQ(UsageChunk(chat, usage)["choices"], json::array());
  const json models = ModelList("m", 5, 4096);
  EXPECT_EQ(models["data"].size(), 1u);
  EXPECT_EQ(models["data"][0]["id"], "m");
  EXPECT_EQ(DumpJson(json("a\xff")), "\"a\xEF\xBF\xBD\"");  // invalid UTF-8 never throws
}

TEST(ApiError, StatusMapping) {
  EXPECT_EQ(HttpStatusFor(StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatusFor(StatusCode::kOutOfRange), 400);
  EXPECT_EQ(HttpStatusFor(StatusCode::kPermissionDenied), 401);
  EXPECT_EQ(HttpStatusFor(StatusCode::kNotFound), 404);
  EXPECT_EQ(HttpStatusFor(StatusCode::kResourceExhausted), 429);
  EXPECT_EQ(HttpStatusFor(StatusCode::kUnavailable), 503);
  EXPECT_EQ(HttpStatusFor(StatusCode::kDeadlineExceeded), 504);
  EXPECT_EQ(HttpStatusFor(StatusCode::kInternal), 500);
  const json e = ApiErrorJson(ApiErrorFromStatus(InvalidArgument("bad"), "n"));
  EXPECT_EQ(e, json::parse(R"({"error":{"message":"bad","type":"invalid_request_error",
      "param":"n","code":null}})"));
  EXPECT_EQ(ApiErrorFromStatus(ResourceExhausted("full")).type, "rate_limit_error");
  EXPECT_EQ(ApiErrorFromStatus(Unavailable("down")).type, "server_error");
}

TEST(Auth, BearerToken) {
  EXPECT_TRUE(CheckBearerToken("", "").ok());
  EXPECT_TRUE(CheckBearerToken("anything", "").ok());
  EXPECT_TRUE(CheckBearerToken("Bearer k1", "k1").ok());
  EXPECT_TRUE(CheckBearerToken("bearer  k1 ", "k1").ok());
  EXPECT_EQ(CheckBearerToken("", "k1").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(CheckBearerToken("Bearer k2", "k1").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(CheckBearerToken("Bearer k1x", "k1").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(CheckBearerToken("Basic k1", "k1").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(CheckBearerToken("Bearer ", "k1").code(), StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace smartgen::server
