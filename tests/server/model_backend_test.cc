// The server over a real (tiny, synthetic) model through ModelBackend: what the HTTP API
// returns is what model::Generate computes.
#include "server/model_backend.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "model/presets.h"
#include "model/synthetic_model.h"
#include "server/http_server.h"
#include "test_util.h"

namespace smartgen::server::testing {
namespace {

class ModelBackendTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model::SyntheticModelSpec spec;
    spec.preset = *model::FindPreset("tiny");
    spec.out = ::testing::TempDir() + "/server_tiny.gguf";
    const Status written = model::WriteSyntheticModel(spec);
    ASSERT_TRUE(written.ok()) << written.ToString();
    ModelBackendOptions options;
    options.threads = 1;
    options.context_length = 512;
    Result<std::unique_ptr<ModelBackend>> backend = ModelBackend::Load(spec.out, options);
    ASSERT_TRUE(backend.ok()) << backend.status().ToString();
    backend_ = std::move(*backend);
  }
  static void TearDownTestSuite() { backend_.reset(); }

  void SetUp() override {
    ASSERT_NE(backend_, nullptr);
    HttpServerOptions options;
    options.keep_alive_timeout_s = 1;
    server_ = std::make_unique<HttpServer>(backend_.get(), options);
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override { server_->Stop(); }

  // Greedy tokens straight from the backend, without HTTP.
  std::vector<std::int32_t> DirectTokens(const std::vector<std::int32_t>& prompt, int n) {
    GenerationRequest g;
    g.prompt = prompt;
    g.max_tokens = n;
    std::vector<std::int32_t> out;
    const auto r = backend_->Generate(g, [&](const GeneratedToken& t) {
      out.push_back(t.id);
      return true;
    });
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return out;
  }

  inline static std::unique_ptr<ModelBackend> backend_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(ModelBackendTest, GreedyCompletionMatchesTheEngineStreamedOrNot) {
  EXPECT_EQ(backend_->model_name(), "server_tiny");
  EXPECT_EQ(backend_->context_length(), 512);
  const json request = {{"prompt", "The quick brown fox"},
                        {"max_tokens", 12},
                        {"temperature", 0},
                        {"smartgen", {{"return_token_ids", true}}}};
  const HttpReply whole = PostJson(server_->port(), "/v1/completions", request);
  ASSERT_EQ(whole.status, 200) << whole.body;
  const json& b = whole.body_json;
  const std::vector<std::int32_t> prompt =
      backend_->tokenizer().Encode("The quick brown fox", true, true);
  const std::vector<std::int32_t> direct = DirectTokens(prompt, 12);
  EXPECT_EQ(b["smartgen"]["token_ids"], json(direct));
  EXPECT_EQ(b["usage"]["prompt_tokens"], prompt.size());
  EXPECT_EQ(b["usage"]["completion_tokens"], direct.size());
  EXPECT_EQ(b["smartgen"]["mode"], "colocated");
  EXPECT_EQ(b["smartgen"]["n_generated"], direct.size());

  json streamed = request;
  streamed["stream"] = true;
  const StreamReply st = PostStream(server_->port(), "/v1/completions", streamed);
  ASSERT_EQ(st.status, 200);
  EXPECT_TRUE(st.done_last);
  EXPECT_EQ(st.Text(), b["choices"][0]["text"]);
  EXPECT_EQ(st.chunks.back()["smartgen"]["token_ids"], json(direct));
  EXPECT_EQ(st.chunks.back()["choices"][0]["finish_reason"], b["choices"][0]["finish_reason"]);
}

TEST_F(ModelBackendTest, SeededSamplingIsReproducibleAndChatWorks) {
  const json request = {{"messages", {{{"role", "user"}, {"content", "hello"}}}},
                        {"max_tokens", 8},
                        {"temperature", 0.9},
                        {"seed", 7},
                        {"smartgen", {{"return_token_ids", true}, {"mode", "colocated"}}}};
  const HttpReply a = PostJson(server_->port(), "/v1/chat/completions", request);
  const HttpReply b = PostJson(server_->port(), "/v1/chat/completions", request);
  ASSERT_EQ(a.status, 200) << a.body;
  ASSERT_EQ(b.status, 200);
  EXPECT_EQ(a.body_json["smartgen"]["token_ids"], b.body_json["smartgen"]["token_ids"]);
  EXPECT_EQ(a.body_json["object"], "chat.completion");
  EXPECT_GT(a.body_json["usage"]["completion_tokens"].get<int>(), 0);
}

TEST_F(ModelBackendTest, OtherTransferModesAre400AndLimitsHold) {
  const HttpReply r = PostJson(server_->port(), "/v1/completions",
                               {{"prompt", "x"}, {"smartgen", {{"mode", "layerwise"}}}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body_json["error"]["message"].get<std::string>().find("colocated"),
            std::string::npos);
  const HttpReply long_prompt =
      PostJson(server_->port(), "/v1/completions", {{"prompt", std::string(600, 'a')}});
  EXPECT_EQ(long_prompt.status, 400);
  EXPECT_EQ(long_prompt.body_json["error"]["code"], "context_length_exceeded");
}

TEST_F(ModelBackendTest, ConcurrentRequestsAreServedOneAfterAnother) {
  std::vector<std::future<HttpReply>> replies;
  for (int i = 0; i < 3; ++i) {
    replies.push_back(std::async(std::launch::async, [&, i] {
      return PostJson(server_->port(), "/v1/completions",
                      {{"prompt", "request " + std::to_string(i)},
                       {"max_tokens", 6},
                       {"temperature", 0},
                       {"smartgen", {{"return_token_ids", true}}}});
    }));
  }
  for (int i = 0; i < 3; ++i) {
    const HttpReply r = replies[i].get();
    ASSERT_EQ(r.status, 200) << r.body;
    const auto prompt = backend_->tokenizer().Encode("request " + std::to_string(i), true, true);
    EXPECT_EQ(r.body_json["smartgen"]["token_ids"], json(DirectTokens(prompt, 6)));
  }
}

// The backend side of a client disconnect: a request cancelled while another holds the
// engine leaves its wait at once; a running one stops at its next token.
TEST_F(ModelBackendTest, CancelSignalEndsAWaitForTheEngineAndARunningRequest) {
  std::promise<void> first_token;
  std::atomic<bool> release{false};
  GenerationRequest holder;
  holder.prompt = {1, 2, 3};
  holder.max_tokens = 64;
  holder.cancel = std::make_shared<CancelSignal>();
  int held_tokens = 0;
  auto running = std::async(std::launch::async, [&] {
    return backend_->Generate(holder, [&](const GeneratedToken&) {
      if (++held_tokens == 1) first_token.set_value();
      const core::Deadline limit = core::Deadline::After(core::Seconds(10));
      while (!release && !limit.Expired())
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return true;
    });
  });
  first_token.get_future().wait();  // the engine is busy now
  GenerationRequest waiter;
  waiter.prompt = {4, 5};
  waiter.max_tokens = 4;
  waiter.deadline = core::Deadline::After(core::Seconds(20));
  waiter.cancel = std::make_shared<CancelSignal>();
  auto waiting = std::async(std::launch::async, [&] {
    return backend_->Generate(waiter, [](const GeneratedToken&) { return true; });
  });
  EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  waiter.cancel->Cancel();
  const Result<GenerationResult> left = waiting.get();  // without the engine ever coming free
  EXPECT_EQ(left.status().code(), StatusCode::kCancelled) << left.status().ToString();
  holder.cancel->Cancel();
  release = true;
  const Result<GenerationResult> stopped = running.get();
  ASSERT_TRUE(stopped.ok()) << stopped.status().ToString();
  EXPECT_EQ(stopped->finish_reason, "cancelled");
  EXPECT_LT(held_tokens, 64);
}

}  // namespace
}  // namespace smartgen::server::testing
