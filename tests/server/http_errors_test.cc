// Every error path of the HTTP server returns the right status and an OpenAI error object.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "server/http_server.h"
#include "test_util.h"

namespace smartgen::server::testing {
namespace {

void ExpectError(const HttpReply& r, int status, const std::string& type,
                 const std::string& param = "", const std::string& code = "") {
  EXPECT_EQ(r.status, status) << r.body;
  EXPECT_EQ(r.content_type, "application/json") << r.body;
  ASSERT_TRUE(r.body_json.is_object()) << r.body;
  const json& e = r.body_json["error"];
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << r.body;
  EXPECT_EQ(e["type"], type) << r.body;
  if (param.empty()) {
    EXPECT_TRUE(e["param"].is_null()) << r.body;
  } else {
    EXPECT_EQ(e["param"], param) << r.body;
  }
  if (code.empty()) {
    EXPECT_TRUE(e["code"].is_null()) << r.body;
  } else {
    EXPECT_EQ(e["code"], code) << r.body;
  }
}

TEST(HttpErrors, MalformedJsonIs400) {
  ScriptedServer s;
  for (const std::string body :
       {"{", "not json", "{\"prompt\": \"x\",}", "", "[1, 2]", "42", "{\"prompt\": \"\xff\"}"}) {
    SCOPED_TRACE(body);
    ExpectError(Post(s.port(), "/v1/completions", body), 400, "invalid_request_error");
  }
  EXPECT_EQ(s.backend().calls(), 0);
}

TEST(HttpErrors, WrongFieldTypesAndValuesAre400NamingTheField) {
  ScriptedServer s;
  struct Case {
    const char* path;
    json body;
    const char* param;
  };
  const json msgs = {{{"role", "user"}, {"content", "hi"}}};
  const std::vector<Case> cases = {
      {"/v1/completions", {{"max_tokens", 1}}, "prompt"},
      {"/v1/completions", {{"prompt", 5}}, "prompt"},
      {"/v1/completions", {{"prompt", {"a", "b"}}}, "prompt"},
      {"/v1/completions", {{"prompt", {1, "b"}}}, "prompt"},
      {"/v1/completions", {{"prompt", {-1}}}, "prompt"},
      {"/v1/completions", {{"prompt", {99999}}}, "prompt"},  // past the vocabulary
      {"/v1/completions", {{"prompt", ""}}, "prompt"},       // no tokens
      {"/v1/completions", {{"prompt", "x"}, {"model", 3}}, "model"},
      {"/v1/completions", {{"prompt", "x"}, {"max_tokens", "10"}}, "max_tokens"},
      {"/v1/completions", {{"prompt", "x"}, {"max_tokens", 0}}, "max_tokens"},
      {"/v1/completions", {{"prompt", "x"}, {"max_tokens", 2.5}}, "max_tokens"},
      {"/v1/completions", {{"prompt", "x"}, {"temperature", "hot"}}, "temperature"},
      {"/v1/completions", {{"prompt", "x"}, {"temperature", 3}}, "temperature"},
      {"/v1/completions", {{"prompt", "x"}, {"top_p", 0}}, "top_p"},
      {"/v1/completions", {{"prompt", "x"}, {"top_k", -5}}, "top_k"},
      {"/v1/completions", {{"prompt", "x"}, {"seed", 1.5}}, "seed"},
      {"/v1/completions", {{"prompt", "x"}, {"stream", "yes"}}, "stream"},
      {"/v1/completions",
       {{"prompt", "x"}, {"stream_options", {{"include_usage", true}}}},
       "stream_options"},
      {"/v1/completions",
       {{"prompt", "x"}, {"stream", true}, {"stream_options", {{"include_usage", 1}}}},
       "stream_options.include_usage"},
      {"/v1/completions", {{"prompt", "x"}, {"stop", 5}}, "stop"},
      {"/v1/completions", {{"prompt", "x"}, {"stop", {"a", 1}}}, "stop"},
      {"/v1/completions", {{"prompt", "x"}, {"stop", ""}}, "stop"},
      {"/v1/completions", {{"prompt", "x"}, {"n", 0}}, "n"},
      {"/v1/completions", {{"prompt", "x"}, {"n", 17}}, "n"},
      {"/v1/completions", {{"prompt", "x"}, {"n", "1"}}, "n"},
      {"/v1/completions", {{"prompt", "x"}, {"best_of", 3}}, "best_of"},
      {"/v1/completions", {{"prompt", "x"}, {"echo", 1}}, "echo"},
      {"/v1/completions", {{"prompt", "x"}, {"logprobs", 21}}, "logprobs"},
      {"/v1/completions", {{"prompt", "x"}, {"logprobs", true}}, "logprobs"},
      {"/v1/completions", {{"prompt", "x"}, {"echo", true}, {"logprobs", 1}}, "logprobs"},
      {"/v1/completions", {{"prompt", "x"}, {"presence_penalty", 2.5}}, "presence_penalty"},
      {"/v1/completions", {{"prompt", "x"}, {"frequency_penalty", -3}}, "frequency_penalty"},
      {"/v1/completions", {{"prompt", "x"}, {"repetition_penalty", 0}}, "repetition_penalty"},
      {"/v1/completions", {{"prompt", "x"}, {"min_p", 1.5}}, "min_p"},
      {"/v1/completions", {{"prompt", "x"}, {"logit_bias", {{"abc", 5}}}}, "logit_bias"},
      {"/v1/completions", {{"prompt", "x"}, {"logit_bias", {{"1", 101}}}}, "logit_bias"},
      {"/v1/completions", {{"prompt", "x"}, {"logit_bias", {{"1", "5"}}}}, "logit_bias"},
      {"/v1/completions", {{"prompt", "x"}, {"logit_bias", {{"99999", 5}}}}, "logit_bias"},
      {"/v1/completions", {{"prompt", "x"}, {"ignore_eos", "yes"}}, "ignore_eos"},
      {"/v1/completions", {{"prompt", "x"}, {"suffix", "end"}}, "suffix"},
      {"/v1/completions", {{"prompt", "x"}, {"min_tokens", 3}}, "min_tokens"},
      {"/v1/completions", {{"prompt", "x"}, {"use_beam_search", true}}, "use_beam_search"},
      {"/v1/completions", {{"prompt", "x"}, {"stop_token_ids", {2}}}, "stop_token_ids"},
      {"/v1/completions", {{"prompt", "x"}, {"guided_json", {{"type", "object"}}}}, "guided_json"},
      {"/v1/completions",
       {{"prompt", "x"}, {"include_stop_str_in_output", true}},
       "include_stop_str_in_output"},
      {"/v1/completions", {{"prompt", "x"}, {"skip_special_tokens", false}}, "skip_special_tokens"},
      {"/v1/completions", {{"prompt", "x"}, {"bad_words", {"a"}}}, "bad_words"},
      {"/v1/completions", {{"prompt", "x"}, {"allowed_token_ids", {1}}}, "allowed_token_ids"},
      {"/v1/completions", {{"prompt", "x"}, {"truncate_prompt_tokens", 5}}, "truncate_prompt_tokens"},
      // This backend (features() none) honours none of these: refused, never ignored.
      {"/v1/completions", {{"prompt", "x"}, {"logprobs", 2}}, "logprobs"},
      {"/v1/completions", {{"prompt", "x"}, {"presence_penalty", 0.5}}, "presence_penalty"},
      {"/v1/completions", {{"prompt", "x"}, {"repetition_penalty", 1.1}}, "repetition_penalty"},
      {"/v1/completions", {{"prompt", "x"}, {"min_p", 0.1}}, "min_p"},
      {"/v1/completions", {{"prompt", "x"}, {"logit_bias", {{"1", 5}}}}, "logit_bias"},
      {"/v1/completions", {{"prompt", "x"}, {"ignore_eos", true}}, "ignore_eos"},
      {"/v1/completions", {{"prompt", "x"}, {"smartgen", "fast"}}, "smartgen"},
      {"/v1/completions", {{"prompt", "x"}, {"smartgen", {{"mode", 1}}}}, "smartgen.mode"},
      {"/v1/chat/completions", {{"prompt", "x"}}, "messages"},
      {"/v1/chat/completions", {{"messages", "hi"}}, "messages"},
      {"/v1/chat/completions", {{"messages", json::array()}}, "messages"},
      {"/v1/chat/completions", {{"messages", {{{"content", "hi"}}}}}, "messages.role"},
      {"/v1/chat/completions",
       {{"messages", {{{"role", "wizard"}, {"content", "hi"}}}}},
       "messages.role"},
      {"/v1/chat/completions",
       {{"messages", {{{"role", "user"}, {"content", 7}}}}},
       "messages.content"},
      {"/v1/chat/completions",
       {{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}}}}}}}},
       "messages.content"},
      {"/v1/chat/completions",
       {{"messages", msgs}, {"max_completion_tokens", -1}},
       "max_completion_tokens"},
      {"/v1/chat/completions", {{"messages", msgs}, {"logprobs", true}}, "logprobs"},
      {"/v1/chat/completions", {{"messages", msgs}, {"logprobs", 2}}, "logprobs"},
      {"/v1/chat/completions", {{"messages", msgs}, {"top_logprobs", 2}}, "top_logprobs"},
      {"/v1/chat/completions",
       {{"messages", msgs}, {"logprobs", true}, {"top_logprobs", 21}},
       "top_logprobs"},
      {"/v1/chat/completions", {{"messages", msgs}, {"echo", true}}, "echo"},
      {"/v1/chat/completions", {{"messages", msgs}, {"tool_choice", "auto"}}, "tool_choice"},
      {"/v1/chat/completions", {{"messages", msgs}, {"tools", {{{"type", "function"}}}}}, "tools"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body.dump());
    ExpectError(PostJson(s.port(), c.path, c.body), 400, "invalid_request_error", c.param);
  }
  EXPECT_EQ(s.backend().calls(), 0);
  // Nulls count as absent, and zero penalties / n = 1 are fine.
  EXPECT_EQ(PostJson(s.port(), "/v1/completions",
                     {{"prompt", "x"},
                      {"max_tokens", nullptr},
                      {"stop", nullptr},
                      {"n", 1},
                      {"frequency_penalty", 0},
                      {"skip_special_tokens", true},
                      {"include_stop_str_in_output", false},
                      {"logprobs", nullptr},
                      {"smartgen", nullptr}})
                .status,
            200);
}

TEST(HttpErrors, OversizeBodyIs413) {
  HttpServerOptions options;
  options.max_body_bytes = 1024;
  ScriptedServer s(options);
  const std::string prompt(2000, 'x');
  ExpectError(PostJson(s.port(), "/v1/completions", {{"prompt", prompt}}), 413,
              "invalid_request_error", "", "request_too_large");
  EXPECT_EQ(s.backend().calls(), 0);
  EXPECT_EQ(PostJson(s.port(), "/v1/completions", {{"prompt", std::string(500, 'x')}}).status, 200);
  EXPECT_EQ(
      Metric(s.Metrics(),
             "smartgen_server_requests_total{endpoint=\"completions\",outcome=\"too_large\"}"),
      1);
}

TEST(HttpErrors, ApiKeyIsRequiredOnV1Routes) {
  HttpServerOptions options;
  options.api_key = "sk-test-123";
  ScriptedServer s(options);
  const json body = {{"prompt", "x"}, {"max_tokens", 2}};
  ExpectError(PostJson(s.port(), "/v1/completions", body), 401, "authentication_error", "",
              "invalid_api_key");
  ExpectError(PostJson(s.port(), "/v1/completions", body, {{"Authorization", "Bearer wrong"}}), 401,
              "authentication_error", "", "invalid_api_key");
  ExpectError(PostJson(s.port(), "/v1/completions", body, {{"Authorization", "sk-test-123"}}), 401,
              "authentication_error", "", "invalid_api_key");
  ExpectError(Get(s.port(), "/v1/models"), 401, "authentication_error", "", "invalid_api_key");
  EXPECT_EQ(s.backend().calls(), 0);
  EXPECT_EQ(
      PostJson(s.port(), "/v1/completions", body, {{"Authorization", "Bearer sk-test-123"}}).status,
      200);
  EXPECT_EQ(Get(s.port(), "/v1/models", {{"Authorization", "bearer sk-test-123"}}).status, 200);
  EXPECT_EQ(Get(s.port(), "/health").status, 200);  // open, as in vLLM
  EXPECT_EQ(Get(s.port(), "/metrics").status, 200);
  const auto m = s.Metrics();
  EXPECT_EQ(
      Metric(m,
             "smartgen_server_requests_total{endpoint=\"completions\",outcome=\"unauthorized\"}"),
      3);
}

TEST(HttpErrors, PromptPastTheContextIs400) {
  ScriptedServer s({}, /*context_length=*/64);
  ExpectError(
      PostJson(s.port(), "/v1/completions", {{"prompt", std::string(60, 'x')}, {"max_tokens", 10}}),
      400, "invalid_request_error", "max_tokens", "context_length_exceeded");
  const HttpReply long_prompt =
      PostJson(s.port(), "/v1/completions", {{"prompt", std::string(100, 'x')}, {"max_tokens", 1}});
  ExpectError(long_prompt, 400, "invalid_request_error", "prompt", "context_length_exceeded");
  EXPECT_NE(long_prompt.body_json["error"]["message"].get<std::string>().find(
                "maximum context length is 64 tokens"),
            std::string::npos);
  ExpectError(PostJson(s.port(), "/v1/chat/completions",
                       {{"messages", {{{"role", "user"}, {"content", std::string(80, 'x')}}}}}),
              400, "invalid_request_error", "messages", "context_length_exceeded");
  EXPECT_EQ(s.backend().calls(), 0);
  EXPECT_EQ(
      PostJson(s.port(), "/v1/completions", {{"prompt", std::string(54, 'x')}, {"max_tokens", 10}})
          .status,
      200);
}

TEST(HttpErrors, UnknownModelIs404AndUnknownRouteIs404) {
  ScriptedServer s;
  ExpectError(PostJson(s.port(), "/v1/completions", {{"prompt", "x"}, {"model", "gpt-4"}}), 404,
              "invalid_request_error", "model", "model_not_found");
  ExpectError(Get(s.port(), "/v1/nothing"), 404, "invalid_request_error", "", "unknown_route");
  ExpectError(Get(s.port(), "/v1/completions"), 404, "invalid_request_error", "", "unknown_route");
  HttpServerOptions options;
  options.served_model_names = {"my-model"};
  ScriptedServer named(options);
  EXPECT_EQ(
      PostJson(named.port(), "/v1/completions", {{"prompt", "x"}, {"model", "my-model"}}).status,
      200);
  EXPECT_EQ(Get(named.port(), "/v1/models").body_json["data"][0]["id"], "my-model");
}

TEST(HttpErrors, ConcurrencyLimitWithoutALineIs429) {
  HttpServerOptions options;
  options.max_concurrent = 2;
  options.max_queued = 0;  // no waiting in line (admission_http_test.cc has the line)
  ScriptedServer s(options);
  s.backend().CloseGate();
  const json body = {{"prompt", "x"}, {"max_tokens", 3}, {"stream", true}};
  auto first =
      std::async(std::launch::async, [&] { return PostStream(s.port(), "/v1/completions", body); });
  auto second = std::async(std::launch::async, [&] {
    return PostJson(s.port(), "/v1/completions", {{"prompt", "y"}});
  });
  ASSERT_TRUE(WaitFor([&] { return s.backend().in_flight() == 2; }));
  ExpectError(PostJson(s.port(), "/v1/completions", {{"prompt", "z"}}), 429, "rate_limit_error", "",
              "rate_limit_exceeded");
  s.backend().OpenGate();
  const StreamReply a = first.get();
  const HttpReply b = second.get();
  EXPECT_EQ(a.status, 200);
  EXPECT_TRUE(a.done_last);
  EXPECT_EQ(b.status, 200);
  EXPECT_EQ(PostJson(s.port(), "/v1/completions", {{"prompt", "z"}}).status, 200);  // room again
  const auto m = s.Metrics();
  EXPECT_EQ(
      Metric(m,
             "smartgen_server_requests_total{endpoint=\"completions\",outcome=\"rate_limited\"}"),
      1);
  EXPECT_EQ(Metric(m, "smartgen_server_requests_total{endpoint=\"completions\",outcome=\"ok\"}"),
            3);
  EXPECT_EQ(Metric(m, "smartgen_server_requests_in_flight"), 0);
}

TEST(HttpErrors, BackendFailuresMapToHttpStatuses) {
  ScriptedServer s;
  const json body = {{"prompt", "x"}, {"max_tokens", 5}};
  const std::vector<std::pair<Status, int>> cases = {
      {Unavailable("no decode node"), 503},
      {ResourceExhausted("KV pool full"), 429},
      {Unimplemented("mode not available"), 400},
      {Internal("bug"), 500},
  };
  for (const auto& [status, http] : cases) {
    Script script;
    script.fail_before_first = status;
    s.backend().SetScript(script);
    const HttpReply r = PostJson(s.port(), "/v1/completions", body);
    EXPECT_EQ(r.status, http) << r.body;
    EXPECT_EQ(r.body_json["error"]["message"], std::string(status.message()));
    json streamed = body;
    streamed["stream"] = true;
    const StreamReply st = PostStream(s.port(), "/v1/completions", streamed);
    EXPECT_EQ(st.status, http) << st.raw;  // failed before the first token: a real status
  }
  // Failing after some tokens: non-streaming gets the error, streaming an error event.
  Script midway;
  midway.fail_after_tokens = 2;
  midway.fail_status = Unavailable("decode node lost");
  s.backend().SetScript(midway);
  ExpectError(PostJson(s.port(), "/v1/completions", body), 503, "server_error", "",
              "service_unavailable");
  const StreamReply st = PostStream(s.port(), "/v1/completions",
                                    {{"prompt", "x"}, {"max_tokens", 5}, {"stream", true}});
  EXPECT_EQ(st.status, 200);
  ASSERT_GE(st.chunks.size(), 3u);
  EXPECT_EQ(st.Text().size(), 2u);
  EXPECT_EQ(st.chunks.back()["error"]["message"], "decode node lost");
  EXPECT_EQ(st.chunks.back()["error"]["code"], "service_unavailable");
  EXPECT_TRUE(st.done_last);
  const auto m = s.Metrics();
  EXPECT_EQ(
      Metric(m, "smartgen_server_requests_total{endpoint=\"completions\",outcome=\"unavailable\"}"),
      4);
}

TEST(HttpErrors, RequestDeadlineIs504) {
  HttpServerOptions options;
  options.request_timeout = core::Millis(300);
  ScriptedServer s(options);
  Script slow;
  slow.token_delay = core::Millis(20);
  s.backend().SetScript(slow);
  const core::Stopwatch watch;
  ExpectError(PostJson(s.port(), "/v1/completions", {{"prompt", "x"}, {"max_tokens", 1000}}), 504,
              "server_error", "", "timeout");
  EXPECT_LT(watch.ElapsedSeconds(), 3.0);
  const StreamReply st = PostStream(s.port(), "/v1/completions",
                                    {{"prompt", "x"}, {"max_tokens", 1000}, {"stream", true}});
  EXPECT_EQ(st.status, 200);
  ASSERT_FALSE(st.chunks.empty());
  EXPECT_EQ(st.chunks.back()["error"]["code"], "timeout");
  EXPECT_TRUE(st.done_last);
  // Stuck before the first token (closed gate): a plain 504.
  s.backend().CloseGate();
  ExpectError(PostJson(s.port(), "/v1/completions", {{"prompt", "x"}, {"stream", true}}), 504,
              "server_error", "", "timeout");
  const auto m = s.Metrics();
  EXPECT_EQ(
      Metric(m, "smartgen_server_requests_total{endpoint=\"completions\",outcome=\"timeout\"}"), 3);
}

}  // namespace
}  // namespace smartgen::server::testing
