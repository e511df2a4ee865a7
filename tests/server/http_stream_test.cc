// Streaming under load, client disconnects, shutdown with requests in flight, and a real
// external client (curl).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <future>
#include <set>
#include <thread>

#include "server/http_server.h"
#include "server/sse.h"
#include "test_util.h"

namespace smartgen::server::testing {
namespace {

TEST(HttpStream, ThirtyTwoConcurrentStreamsLoseAndDuplicateNothing) {
  constexpr int kClients = 32, kTokens = 40;
  HttpServerOptions options;
  options.max_concurrent = kClients;
  ScriptedServer s(options);
  Script script;
  script.token_delay = core::Millis(1);
  s.backend().SetScript(script);

  std::vector<std::future<StreamReply>> replies;
  for (int i = 0; i < kClients; ++i) {
    replies.push_back(std::async(std::launch::async, [&, i] {
      return PostStream(s.port(), "/v1/completions",
                        {{"prompt", "request " + std::to_string(i)},
                         {"max_tokens", kTokens},
                         {"stream", true},
                         {"stream_options", {{"include_usage", true}}}});
    }));
  }
  std::set<std::string> ids;
  for (int i = 0; i < kClients; ++i) {
    const StreamReply r = replies[i].get();
    SCOPED_TRACE(i);
    ASSERT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(r.done_count, 1);
    EXPECT_TRUE(r.done_last);
    EXPECT_EQ(r.Text(), ExpectedDefaultText(TokensOf("request " + std::to_string(i)), kTokens));
    ASSERT_EQ(r.chunks.size(), kTokens + 2u);  // tokens, finish, usage
    EXPECT_EQ(r.chunks.back()["usage"]["completion_tokens"], kTokens);
    std::set<std::string> ids_in_stream;
    for (const json& c : r.chunks) ids_in_stream.insert(c["id"].get<std::string>());
    EXPECT_EQ(ids_in_stream.size(), 1u);
    ids.insert(*ids_in_stream.begin());
  }
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(kClients));
  EXPECT_EQ(s.backend().calls(), kClients);
  EXPECT_GT(s.backend().max_in_flight(), 1);  // they really overlapped

  const auto m = s.Metrics();
  EXPECT_EQ(Metric(m, "smartgen_server_requests_total{endpoint=\"completions\",outcome=\"ok\"}"),
            kClients);
  EXPECT_EQ(Metric(m, "smartgen_server_generation_tokens_total"), kClients * kTokens);
  EXPECT_EQ(Metric(m, "smartgen_server_ttft_seconds_count"), kClients);
  EXPECT_EQ(Metric(m, "smartgen_server_ttst_seconds_count"), kClients);
  EXPECT_EQ(Metric(m, "smartgen_server_tbt_seconds_count"), kClients * (kTokens - 2));
  EXPECT_EQ(Metric(m, "smartgen_server_tbt_seconds_bucket{le=\"+Inf\"}"), kClients * (kTokens - 2));
  EXPECT_EQ(Metric(m, "smartgen_server_e2e_seconds_count"), kClients);
  EXPECT_EQ(Metric(m, "smartgen_server_requests_in_flight"), 0);
}

// Connects a raw socket, sends a streaming request, reads until `min_bytes` of the body
// arrived, then closes the connection.
std::string StreamThenHangUp(int port, const std::string& body, std::size_t min_bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  std::string received;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request =
        "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: application/json\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    EXPECT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    char buf[4096];
    while (received.size() < min_bytes) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      received.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return received;
}

TEST(HttpStream, ClientDisconnectCancelsTheGeneration) {
  ScriptedServer s;
  Script slow;
  slow.token_delay = core::Millis(5);
  s.backend().SetScript(slow);
  const json body = {{"prompt", "x"}, {"max_tokens", 4000}, {"stream", true}};
  const std::string received = StreamThenHangUp(s.port(), body.dump(), 2000);
  EXPECT_NE(received.find("HTTP/1.1 200"), std::string::npos) << received;
  EXPECT_NE(received.find("data: {"), std::string::npos) << received;
  // The backend's next on_token returns false; everything is released.
  EXPECT_TRUE(WaitFor([&] { return s.backend().cancellations() == 1; }));
  EXPECT_TRUE(WaitFor([&] { return s.backend().in_flight() == 0; }));
  EXPECT_TRUE(WaitFor([&] {
    const auto m = s.Metrics();
    return Metric(m, "smartgen_server_requests_in_flight") == 0 &&
           Metric(m,
                  "smartgen_server_requests_total{endpoint=\"completions\",outcome="
                  "\"cancelled\"}") == 1;
  }));
  const auto m = s.Metrics();
  EXPECT_LT(Metric(m, "smartgen_server_generation_tokens_total"), 4000);
  // The server still serves.
  s.backend().SetScript({});
  EXPECT_EQ(PostJson(s.port(), "/v1/completions", {{"prompt", "x"}}).status, 200);
}

TEST(HttpStream, StopEndsInFlightStreamsPromptly) {
  auto s = std::make_unique<ScriptedServer>();
  Script slow;
  slow.token_delay = core::Millis(5);
  s->backend().SetScript(slow);
  const int port = s->port();
  auto stream = std::async(std::launch::async, [port] {
    return PostStream(port, "/v1/completions",
                      {{"prompt", "x"}, {"max_tokens", 4000}, {"stream", true}});
  });
  auto whole = std::async(std::launch::async, [port] {
    return PostJson(port, "/v1/completions", {{"prompt", "y"}, {"max_tokens", 4000}});
  });
  ASSERT_TRUE(WaitFor([&] { return s->backend().in_flight() == 2; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const core::Stopwatch watch;
  s->server().Stop();
  EXPECT_LT(watch.ElapsedSeconds(), 3.0);
  const StreamReply r = stream.get();
  EXPECT_EQ(r.status, 200);
  ASSERT_FALSE(r.chunks.empty());
  EXPECT_EQ(r.chunks.back()["error"]["code"], "service_unavailable") << r.raw;
  const HttpReply w = whole.get();
  EXPECT_EQ(w.status, 503) << w.body;
  EXPECT_EQ(w.body_json["error"]["code"], "service_unavailable");
  EXPECT_EQ(s->backend().in_flight(), 0);
  s->server().Stop();  // idempotent
  s.reset();
}

TEST(HttpStream, SilentStreamsGetKeepAliveComments) {
  HttpServerOptions options;
  options.sse_keepalive = core::Millis(40);
  ScriptedServer s(options);
  Script slow;
  slow.tokens = TokensOf("abc");
  slow.token_delay = core::Millis(150);
  s.backend().SetScript(slow);
  const StreamReply r = PostStream(s.port(), "/v1/completions",
                                   {{"prompt", "x"}, {"max_tokens", 3}, {"stream", true}});
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.raw.find(": keep-alive\n\n"), std::string::npos) << r.raw;
  EXPECT_EQ(r.Text(), "abc");  // comments are not events
  EXPECT_TRUE(r.done_last);
}

TEST(HttpStream, StartFailsCleanlyOnABusyPort) {
  ScriptedServer first;
  ScriptedBackend backend;
  HttpServerOptions options;
  options.port = first.port();
  HttpServer second(&backend, options);
  const Status status = second.Start();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_EQ(second.port(), 0);
  options.port = 0;
  options.max_concurrent = 0;
  EXPECT_EQ(HttpServer(&backend, options).Start().code(), StatusCode::kInvalidArgument);
}

TEST(HttpStream, CurlReadsTheEventStream) {
  if (std::system("command -v curl > /dev/null 2>&1") != 0) GTEST_SKIP() << "curl not installed";
  ScriptedServer s;
  Script script;
  script.tokens = TokensOf("Grüße, world");
  script.tokens.push_back(kEos);
  script.token_delay = core::Millis(1);
  s.backend().SetScript(script);
  const std::string body_path = ::testing::TempDir() + "/curl_body.json";
  std::ofstream(body_path) << json({{"model", "scripted"},
                                    {"messages", {{{"role", "user"}, {"content", "greet"}}}},
                                    {"stream", true},
                                    {"stream_options", {{"include_usage", true}}}})
                                  .dump();
  const std::string command =
      "curl -sN --max-time 10 -X POST -H 'Content-Type: application/json' "
      "--data-binary @" +
      body_path + " http://127.0.0.1:" + std::to_string(s.port()) + "/v1/chat/completions";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[4096];
  while (const std::size_t n = std::fread(buf, 1, sizeof(buf), pipe)) output.append(buf, n);
  ASSERT_EQ(::pclose(pipe), 0) << output;

  SseParser parser;
  std::vector<std::string> events;
  parser.Feed(output, &events);
  EXPECT_FALSE(parser.has_partial());
  ASSERT_GE(events.size(), 4u) << output;
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    const json chunk = json::parse(events[i]);
    if (!chunk["choices"].empty() && chunk["choices"][0]["delta"].contains("content")) {
      text += chunk["choices"][0]["delta"]["content"].get<std::string>();
    }
  }
  EXPECT_EQ(text, "Grüße, world");
  const json usage = json::parse(events[events.size() - 2]);
  EXPECT_EQ(usage["usage"]["completion_tokens"], script.tokens.size());
  EXPECT_EQ(json::parse(events[events.size() - 3])["choices"][0]["finish_reason"], "stop");
}

}  // namespace
}  // namespace smartgen::server::testing
