// The admission line over HTTP (queue, 429 with Retry-After, queue time in /metrics), and
// clients that leave: noticed within about a second while nothing is written to them, the
// backend told at once, never counted as a completed request. A request its backend cancelled
// on its own is not a 200.
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <vector>

#include "raw_client.h"
#include "server/http_server.h"
#include "test_util.h"

namespace smartgen::server::testing {
namespace {

const json kStream = {{"prompt", "x"}, {"max_tokens", 3}, {"stream", true}};

std::string Request(const json& body) {
  const std::string b = body.dump();
  return RequestHead("POST", "/v1/completions",
                     "Content-Type: application/json\r\nContent-Length: " +
                         std::to_string(b.size()) + "\r\n") +
         b;
}

double Outcome(ScriptedServer& s, const std::string& outcome) {
  return Metric(s.Metrics(), "smartgen_server_requests_total{endpoint=\"completions\",outcome=\"" +
                                 outcome + "\"}");
}

TEST(AdmissionHttp, RequestsWaitInLineAndAFullLineIs429WithRetryAfter) {
  HttpServerOptions options;
  options.max_concurrent = 1;
  options.max_queued = 1;
  options.retry_after_s = 3;
  ScriptedServer s(options);
  s.backend().CloseGate();
  auto running = std::async(std::launch::async,
                            [&] { return PostStream(s.port(), "/v1/completions", kStream); });
  ASSERT_TRUE(WaitFor([&] { return s.backend().in_flight() == 1; }));
  auto waiting = std::async(std::launch::async, [&] {
    return PostJson(s.port(), "/v1/completions", {{"prompt", "y"}});
  });
  ASSERT_TRUE(WaitFor([&] { return Metric(s.Metrics(), "smartgen_server_requests_queued") == 1; }));
  httplib::Client client("127.0.0.1", s.port());
  client.set_read_timeout(5, 0);
  auto full = client.Post("/v1/completions", json{{"prompt", "z"}}.dump(), "application/json");
  ASSERT_TRUE(full);
  EXPECT_EQ(full->status, 429) << full->body;
  EXPECT_EQ(full->get_header_value("Retry-After"), "3");
  EXPECT_NE(full->body.find("rate_limit_exceeded"), std::string::npos);
  s.backend().OpenGate();
  EXPECT_EQ(running.get().status, 200);
  EXPECT_EQ(waiting.get().status, 200);  // it waited rather than being refused
  const auto m = s.Metrics();
  EXPECT_EQ(Metric(m, "smartgen_server_queue_seconds_count"), 2);
  EXPECT_GT(Metric(m, "smartgen_server_queue_seconds_sum"), 0);
  EXPECT_EQ(Outcome(s, "rate_limited"), 1);
  EXPECT_EQ(Outcome(s, "ok"), 2);
  EXPECT_EQ(Metric(m, "smartgen_server_requests_queued"), 0);
}

TEST(AdmissionHttp, WaitingPastTheQueueTimeoutIs429) {
  HttpServerOptions options;
  options.max_concurrent = 1;
  options.queue_timeout = core::Millis(200);
  ScriptedServer s(options);
  s.backend().CloseGate();
  auto running = std::async(std::launch::async,
                            [&] { return PostStream(s.port(), "/v1/completions", kStream); });
  ASSERT_TRUE(WaitFor([&] { return s.backend().in_flight() == 1; }));
  core::Stopwatch w;
  const HttpReply late = PostJson(s.port(), "/v1/completions", {{"prompt", "y"}});
  EXPECT_EQ(late.status, 429) << late.body;
  EXPECT_GE(w.ElapsedNanos(), core::Millis(200));
  s.backend().OpenGate();
  EXPECT_EQ(running.get().status, 200);
  EXPECT_EQ(s.backend().calls(), 1);
}

TEST(AdmissionHttp, AClientThatLeavesTheLineIsRemovedFromIt) {
  HttpServerOptions options;
  options.max_concurrent = 1;
  ScriptedServer s(options);
  s.backend().CloseGate();
  auto running = std::async(std::launch::async,
                            [&] { return PostStream(s.port(), "/v1/completions", kStream); });
  ASSERT_TRUE(WaitFor([&] { return s.backend().in_flight() == 1; }));
  {
    RawClient leaver(s.port());
    leaver.Send(Request({{"prompt", "y"}}));
    ASSERT_TRUE(
        WaitFor([&] { return Metric(s.Metrics(), "smartgen_server_requests_queued") == 1; }));
  }  // hangs up while in line
  EXPECT_TRUE(WaitFor([&] { return Metric(s.Metrics(), "smartgen_server_requests_queued") == 0; },
                      core::Millis(1500)));
  EXPECT_TRUE(WaitFor([&] { return Outcome(s, "cancelled") == 1; }));
  s.backend().OpenGate();
  EXPECT_EQ(running.get().status, 200);
  EXPECT_EQ(s.backend().calls(), 1);  // the one that left never reached the backend
}

// Fifty clients hang up while their requests wait for a first token that does not come (the
// backend is held at its gate): nothing is written to them, yet every generation is
// cancelled, and the backend is told through its cancel signal, within about a second.
TEST(AdmissionHttp, FiftyDisconnectsWhileNothingIsWrittenCancelEveryRequestWithinASecond) {
  constexpr int kClients = 50;
  HttpServerOptions options;
  options.max_concurrent = 64;
  ScriptedServer s(options);
  s.backend().CloseGate();
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<RawClient>(s.port()));
    // Half stream, half do not: both must notice.
    json body = {{"prompt", "p" + std::to_string(i)}, {"max_tokens", 100}};
    if (i % 2 == 0) body["stream"] = true;
    clients.back()->Send(Request(body));
  }
  ASSERT_TRUE(WaitFor([&] { return s.backend().in_flight() == kClients; }));
  core::Stopwatch w;
  clients.clear();  // all hang up
  const bool all =
      WaitFor([&] { return s.backend().cancel_signals() == kClients; }, core::Millis(1500));
  RecordProperty("all_cancelled_ms", std::to_string(core::ToMillis(w.ElapsedNanos())));
  EXPECT_TRUE(all) << s.backend().cancel_signals() << " of " << kClients << " cancelled";
  EXPECT_TRUE(WaitFor([&] { return s.backend().in_flight() == 0; }));
  EXPECT_TRUE(WaitFor([&] { return Outcome(s, "cancelled") == kClients; }));
  EXPECT_EQ(Outcome(s, "ok"), 0);
  EXPECT_EQ(Metric(s.Metrics(), "smartgen_server_requests_in_flight"), 0);
  s.backend().OpenGate();
  EXPECT_EQ(PostJson(s.port(), "/v1/completions", {{"prompt", "x"}}).status, 200);
}

TEST(AdmissionHttp, ARequestTheBackendCancelledOnItsOwnIsNotA200) {
  ScriptedServer s;
  Script script;
  script.cancelled_after_tokens = 2;  // e.g. a node cancelled by someone else
  s.backend().SetScript(script);
  const HttpReply plain =
      PostJson(s.port(), "/v1/completions", {{"prompt", "x"}, {"max_tokens", 10}});
  EXPECT_EQ(plain.status, 503) << plain.body;
  const StreamReply stream = PostStream(s.port(), "/v1/completions",
                                        {{"prompt", "x"}, {"max_tokens", 10}, {"stream", true}});
  EXPECT_EQ(stream.status, 200);  // the headers went out with the first token
  ASSERT_FALSE(stream.chunks.empty());
  EXPECT_TRUE(stream.chunks.back().contains("error")) << stream.raw;
  for (const json& c : stream.chunks) {
    if (c.contains("choices") && !c["choices"].empty()) {
      EXPECT_NE(c["choices"][0]["finish_reason"], "cancelled") << stream.raw;
    }
  }
  EXPECT_EQ(Outcome(s, "ok"), 0);
  EXPECT_EQ(Outcome(s, "unavailable"), 2);
}

// A client that stops reading its stream: once the socket buffers are full, a write waits at
// most write_timeout, then the client counts as gone and its generation is cancelled.
TEST(AdmissionHttp, AClientThatStopsReadingIsDroppedAfterTheWriteTimeout) {
  HttpServerOptions options;
  options.write_timeout = core::Millis(300);
  ScriptedServer s(options, /*context_length=*/1 << 22);
  Script steady;
  steady.token_delay = 50'000;  // 50 us: still generating when the buffers fill (~1 s)
  s.backend().SetScript(steady);
  RawClient c(s.port());
  c.Send(Request({{"prompt", "x"}, {"max_tokens", 4000000}, {"stream", true}}));
  // It reads nothing; events pile up in the kernel's buffers until a write blocks.
  EXPECT_TRUE(WaitFor([&] { return s.backend().cancellations() == 1; }, core::Seconds(30)));
  EXPECT_TRUE(WaitFor([&] { return Outcome(s, "cancelled") == 1; }));
  EXPECT_LT(Metric(s.Metrics(), "smartgen_server_generation_tokens_total"), 4000000);
}

}  // namespace
}  // namespace smartgen::server::testing
