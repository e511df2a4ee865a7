// Slow and idle clients: heads that never finish, heads that are too large, hundreds of
// slow-header connections (slowloris) and idle keep-alive connections cost no worker thread,
// and the cap on open connections drops the oldest first.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "raw_client.h"
#include "server/http_server.h"
#include "test_util.h"

namespace smartgen::server::testing {
namespace {

bool HasHead(const std::string& raw) {
  return raw.find("\r\n\r\n") != std::string::npos;
}

int CountOf(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (std::size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

TEST(SlowClients, HeadNotCompleteByTheHeaderTimeoutIs408) {
  HttpServerOptions options;
  options.header_timeout = core::Millis(300);
  ScriptedServer s(options);
  RawClient c(s.port());
  // A byte every 50 ms keeps the connection busy but never completes the head.
  std::string partial = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Slow: ";
  bool closed = false;
  for (int i = 0; i < 200 && !closed; ++i) {
    if (!c.Send(partial.substr(0, 1))) break;
    partial = partial.size() > 1 ? partial.substr(1) : "a";
    c.ReadUntil(HasHead, core::Millis(50));
    closed = StatusOf(c.received()) != 0;
  }
  EXPECT_EQ(StatusOf(c.received()), 408) << c.received();
  EXPECT_TRUE(c.ReadUntilClosed(core::Seconds(5)));
  EXPECT_TRUE(WaitFor([&] {
    return Metric(s.Metrics(),
                  "smartgen_server_connections_closed_total{reason=\"header_timeout\"}") >= 1;
  }));
  EXPECT_EQ(s.backend().calls(), 0);
}

TEST(SlowClients, HeadLargerThanTheLimitIs431) {
  HttpServerOptions options;
  options.max_header_bytes = 4096;
  ScriptedServer s(options);
  RawClient c(s.port());
  c.Send("GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(10000, 'a') + "\r\n\r\n");
  EXPECT_EQ(StatusOf(c.ReadUntil(HasHead)), 431) << c.received().substr(0, 200);
  EXPECT_TRUE(c.ReadUntilClosed(core::Seconds(5)));
}

// Latencies (ms) of requests from `clients` threads, until each made `min_each` and
// `min_time` passed; each client pauses `pause` between requests.
std::vector<double> Latencies(int port, int clients, int min_each, core::Nanos min_time,
                              core::Nanos pause = 0) {
  const core::Deadline until = core::Deadline::After(min_time);
  std::vector<std::future<std::vector<double>>> futures;
  for (int i = 0; i < clients; ++i) {
    futures.push_back(std::async(std::launch::async, [&, i] {
      std::vector<double> ms;
      while (static_cast<int>(ms.size()) < min_each || !until.Expired()) {
        core::Stopwatch w;
        const HttpReply r =
            PostJson(port, "/v1/completions",
                     {{"prompt", "client " + std::to_string(i)}, {"max_tokens", 4}});
        EXPECT_EQ(r.status, 200) << r.body;
        ms.push_back(core::ToMillis(w.ElapsedNanos()));
        if (pause > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(pause));
      }
      return ms;
    }));
  }
  std::vector<double> all;
  for (auto& f : futures) {
    const std::vector<double> ms = f.get();
    all.insert(all.end(), ms.begin(), ms.end());
  }
  std::sort(all.begin(), all.end());
  return all;
}

double P99(const std::vector<double>& sorted) {
  return sorted.empty() ? 0 : sorted[std::min(sorted.size() - 1, sorted.size() * 99 / 100)];
}

// Slowloris: 200 connections each send one more header byte every 100 ms and never finish
// their heads, for 2 s, while 10 clients make at least 100 requests. With 8 workers, a server
// that gave each connection a worker would be starved; here the normal requests keep their
// unloaded latency (p99 within 2x, or within 50 ms on a noisy machine) and the slow
// connections stay open all along.
TEST(SlowClients, TwoHundredSlowHeadsDoNotStarveNormalRequests) {
  constexpr int kSlow = 200, kClients = 10;
  HttpServerOptions options;
  options.max_concurrent = 8;
  options.max_queued = 16;
  options.threads = 8;  // far fewer workers than slow connections
  // SMARTGEN_SLOWLORIS_SECONDS=60 holds them as long as issue 11 asks (docs/RESULTS.md).
  const char* hold = std::getenv("SMARTGEN_SLOWLORIS_SECONDS");
  const double hold_s = hold != nullptr ? std::max(1.0, std::atof(hold)) : 2.0;
  options.header_timeout = core::Seconds(hold_s + 30);
  ScriptedServer s(options);
  const std::vector<double> unloaded = Latencies(s.port(), kClients, 10, 0);

  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < kSlow; ++i) {
    slow.push_back(std::make_unique<RawClient>(s.port()));
    ASSERT_TRUE(slow.back()->connected());
    slow.back()->Send("POST /v1/completions HTTP/1.1\r\nHost: x\r\n");
  }
  std::atomic<bool> trickle{true};
  std::thread trickler([&] {
    while (trickle) {
      for (auto& c : slow) c->Send("X");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  ASSERT_TRUE(
      WaitFor([&] { return Metric(s.Metrics(), "smartgen_server_connections_open") >= kSlow; }));
  const std::vector<double> loaded =
      Latencies(s.port(), kClients, 10, core::Seconds(hold_s), core::Millis(20));
  // The slow connections were held open all along, not dropped to make room.
  EXPECT_GE(Metric(s.Metrics(), "smartgen_server_connections_open"), kSlow);
  trickle = false;
  trickler.join();
  ASSERT_GE(loaded.size(), 100u);
  RecordProperty("unloaded_p99_ms", std::to_string(P99(unloaded)));
  RecordProperty("loaded_p99_ms", std::to_string(P99(loaded)));
  RecordProperty("loaded_requests", std::to_string(loaded.size()));
  EXPECT_LE(P99(loaded), std::max(2 * P99(unloaded), P99(unloaded) + 50.0))
      << "unloaded p99 " << P99(unloaded) << " ms";
  EXPECT_EQ(Metric(s.Metrics(),
                   "smartgen_server_requests_total{endpoint=\"completions\",outcome=\"ok\"}"),
            static_cast<double>(unloaded.size() + loaded.size()));
}

TEST(SlowClients, IdleKeepAliveConnectionsHoldNoWorker) {
  HttpServerOptions options;
  options.threads = 1;  // one worker: an idle connection holding it would block the rest
  ScriptedServer s(options);
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 5; ++i) {
    idle.push_back(std::make_unique<RawClient>(s.port()));
    idle.back()->Send(RequestHead("GET", "/health"));
    EXPECT_EQ(StatusOf(idle.back()->ReadUntil(
                  [](const std::string& r) { return r.find("\"ok\"") != std::string::npos; })),
              200);
  }
  // Five connections stay open and idle; another client is still served, twice over one
  // connection, and a pipelined pair is answered in order.
  EXPECT_EQ(PostJson(s.port(), "/v1/completions", {{"prompt", "x"}}).status, 200);
  RawClient pipelined(s.port());
  pipelined.Send(RequestHead("GET", "/health") + RequestHead("GET", "/v1/models"));
  const std::string both = pipelined.ReadUntil([](const std::string& r) {
    return r.find("\"ok\"") != std::string::npos && r.find("\"scripted\"") != std::string::npos;
  });
  EXPECT_EQ(CountOf(both, "HTTP/1.1 200"), 2) << both;
  EXPECT_LT(both.find("\"ok\""), both.find("\"scripted\""));
  EXPECT_GE(Metric(s.Metrics(), "smartgen_server_connections_open"), 5);
}

TEST(SlowClients, PastTheConnectionCapTheOldestIsClosedFirst) {
  HttpServerOptions options;
  options.max_connections = 20;
  ScriptedServer s(options);
  std::vector<std::unique_ptr<RawClient>> silent;
  for (int i = 0; i < 30; ++i) {
    silent.push_back(std::make_unique<RawClient>(s.port()));
    // One at a time, so that "oldest" is well defined.
    ASSERT_TRUE(WaitFor([&] {
      return Metric(s.Metrics(), "smartgen_server_connections_open") >= std::min(i + 1, 20);
    }));
  }
  EXPECT_TRUE(silent.front()->ReadUntilClosed(core::Seconds(5)));
  EXPECT_TRUE(WaitFor([&] {
    return Metric(s.Metrics(), "smartgen_server_connections_closed_total{reason=\"evicted\"}") >=
           10;
  }));
  EXPECT_EQ(PostJson(s.port(), "/v1/completions", {{"prompt", "x"}}).status, 200);
}

TEST(SlowClients, IdleKeepAliveConnectionIsClosedAfterTheKeepAliveTimeout) {
  ScriptedServer s;  // keep_alive_timeout_s = 1 (test_util.cc)
  RawClient c(s.port());
  c.Send(RequestHead("GET", "/health"));
  EXPECT_EQ(StatusOf(c.ReadUntil(HasHead)), 200);
  EXPECT_TRUE(c.ReadUntilClosed(core::Seconds(5)));
  EXPECT_TRUE(WaitFor([&] {
    return Metric(s.Metrics(),
                  "smartgen_server_connections_closed_total{reason=\"idle_timeout\"}") >= 1;
  }));
}

}  // namespace
}  // namespace smartgen::server::testing
