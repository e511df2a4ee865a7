// Request bodies: the limit holds while reading (chunked or not), bodies that are framed
// wrongly are refused without being read, and a refused body never reaches the backend.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "core/process_stats.h"
#include "raw_client.h"
#include "server/http_server.h"
#include "test_util.h"

namespace smartgen::server::testing {
namespace {

// ThreadSanitizer's shadow memory grows RSS with every byte touched: RSS says nothing there.
#if defined(__SANITIZE_THREAD__)
constexpr bool kRssMeaningful = false;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kRssMeaningful = false;
#else
constexpr bool kRssMeaningful = true;
#endif
#else
constexpr bool kRssMeaningful = true;
#endif

bool HasWholeResponse(const std::string& raw) {
  const std::size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos) return false;
  const std::size_t cl = raw.find("Content-Length: ");
  if (cl == std::string::npos || cl > head_end) return true;
  return raw.size() >= head_end + 4 + std::stoul(raw.substr(cl + 16));
}

// Sends `head` (and `body`) on a fresh connection and returns the first response.
std::string Exchange(int port, const std::string& head, const std::string& body = "") {
  RawClient c(port);
  EXPECT_TRUE(c.connected());
  c.Send(head + body);
  return c.ReadUntil(HasWholeResponse);
}

TEST(BodyLimits, ChunkedBodyPastTheLimitIs413AndIsNeverBuffered) {
  HttpServerOptions options;
  options.max_body_bytes = std::size_t{1} << 20;
  ScriptedServer s(options);
  constexpr std::size_t kTotal = std::size_t{100} << 20;  // 100 MB offered
  const std::int64_t baseline = core::CurrentRssBytes();
  std::atomic<bool> sampling{true};
  std::atomic<std::int64_t> peak{baseline};
  std::thread sampler([&] {
    while (sampling) {
      peak = std::max<std::int64_t>(peak, core::CurrentRssBytes());
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });

  RawClient c(s.port());
  ASSERT_TRUE(c.connected());
  std::string response;
  std::thread reader([&] { response = c.ReadUntil(HasWholeResponse, core::Seconds(20)); });
  ASSERT_TRUE(c.Send(RequestHead("POST", "/v1/completions",
                                 "Content-Type: application/json\r\n"
                                 "Transfer-Encoding: chunked\r\n")));
  const std::string chunk = "10000\r\n" + std::string(0x10000, ' ') + "\r\n";
  std::size_t sent = 0;
  while (sent < kTotal && c.Send(chunk)) sent += 0x10000;
  reader.join();
  sampling = false;
  sampler.join();

  EXPECT_EQ(StatusOf(response), 413) << response.substr(0, 300);
  EXPECT_NE(response.find("request_too_large"), std::string::npos);
  const double growth_mb = static_cast<double>(peak - baseline) / (1 << 20);
  RecordProperty("rss_growth_mb", std::to_string(growth_mb));
  RecordProperty("bytes_sent_mb", std::to_string(sent >> 20));
  if (kRssMeaningful) {
    EXPECT_LT(growth_mb, 64.0) << "peak RSS grew by " << growth_mb << " MB";
  }
  EXPECT_EQ(s.backend().calls(), 0);
  EXPECT_EQ(
      Metric(s.Metrics(),
             "smartgen_server_requests_total{endpoint=\"completions\",outcome=\"too_large\"}"),
      1);
}

TEST(BodyLimits, DeclaredLengthPastTheLimitIs413BeforeAnyByteIsSent) {
  ScriptedServer s;
  const std::string head = RequestHead("POST", "/v1/completions",
                                       "Content-Type: application/json\r\n"
                                       "Content-Length: 104857600\r\n");
  RawClient c(s.port());
  c.Send(head);  // and no body at all: the answer must not wait for it
  EXPECT_EQ(StatusOf(c.ReadUntil(HasWholeResponse)), 413) << c.received();
  EXPECT_TRUE(c.ReadUntilClosed(core::Seconds(5)));  // the unread body ends the connection
  // With Expect: 100-continue the client is told not to send it.
  RawClient e(s.port());
  e.Send(RequestHead("POST", "/v1/completions",
                     "Content-Length: 104857600\r\nExpect: 100-continue\r\n"));
  const std::string r = e.ReadUntil(HasWholeResponse);
  EXPECT_EQ(StatusOf(r), 413) << r;
  EXPECT_EQ(r.find("100 Continue"), std::string::npos);
  EXPECT_EQ(s.backend().calls(), 0);
}

TEST(BodyLimits, ChunkedBodyWithinTheLimitIsServed) {
  ScriptedServer s;
  const std::string json = R"({"prompt": "hi", "max_tokens": 3})";
  const std::string body = "5\r\n" + json.substr(0, 5) + "\r\n" +
                           fmt::format("{:x}\r\n", json.size() - 5) + json.substr(5) +
                           "\r\n0\r\n\r\n";
  const std::string r = Exchange(s.port(),
                                 RequestHead("POST", "/v1/completions",
                                             "Content-Type: application/json\r\n"
                                             "Transfer-Encoding: chunked\r\n"),
                                 body);
  EXPECT_EQ(StatusOf(r), 200) << r;
  EXPECT_NE(r.find("\"text\""), std::string::npos) << r;
}

TEST(BodyLimits, WronglyFramedBodiesAreRefusedUnread) {
  ScriptedServer s;
  struct Case {
    std::string method, path, headers;
    int status;
  };
  const std::vector<Case> cases = {
      {"POST", "/v1/completions", "", 411},  // no length, no chunking
      {"POST", "/v1/completions", "Transfer-Encoding: gzip, chunked\r\n", 501},
      {"POST", "/v1/completions", "Content-Length: 12abc\r\n", 400},
      {"POST", "/v1/completions", "Content-Length: 5\r\nContent-Length: 7\r\n", 400},
      {"POST", "/v1/models", "Content-Length: 1000\r\n", 404},  // no route takes it
      {"POST", "/nowhere", "Transfer-Encoding: chunked\r\n", 404},
      {"GET", "/health", "Content-Length: 10\r\n", 400},  // a GET has no body
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.method + " " + c.path + " " + c.headers);
    RawClient client(s.port());
    client.Send(RequestHead(c.method, c.path, c.headers));
    EXPECT_EQ(StatusOf(client.ReadUntil(HasWholeResponse)), c.status) << client.received();
    EXPECT_TRUE(client.ReadUntilClosed(core::Seconds(5)));
  }
  // A chunked body that breaks off into garbage is a 400, not a hang.
  const std::string bad =
      Exchange(s.port(), RequestHead("POST", "/v1/completions", "Transfer-Encoding: chunked\r\n"),
               "zz\r\nnot hex\r\n");
  EXPECT_EQ(StatusOf(bad), 400) << bad;
  EXPECT_EQ(s.backend().calls(), 0);
  // The server is unharmed.
  EXPECT_EQ(PostJson(s.port(), "/v1/completions", {{"prompt", "x"}}).status, 200);
}

// gzip of `n` spaces: a few kilobytes that decode to n bytes.
std::string GzipOfSpaces(std::size_t n) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  const std::string in(n, ' ');
  std::string out(deflateBound(&z, in.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// A compressed body is limited by what it decodes to: 64 MB of spaces in ~64 KB of gzip.
TEST(BodyLimits, CompressedBodyIsLimitedByItsDecodedSize) {
  HttpServerOptions options;
  options.max_body_bytes = std::size_t{1} << 20;
  ScriptedServer s(options);
  const std::string bomb = GzipOfSpaces(std::size_t{64} << 20);
  ASSERT_LT(bomb.size(), options.max_body_bytes);  // it passes the declared-length check
  const std::int64_t before = core::CurrentRssBytes();
  const std::string r = Exchange(s.port(),
                                 RequestHead("POST", "/v1/completions",
                                             "Content-Type: application/json\r\n"
                                             "Content-Encoding: gzip\r\nContent-Length: " +
                                                 std::to_string(bomb.size()) + "\r\n"),
                                 bomb);
  EXPECT_EQ(StatusOf(r), 413) << r.substr(0, 300);
  if (kRssMeaningful) {
    EXPECT_LT(core::CurrentRssBytes() - before, std::int64_t{32} << 20);
  }
  // A small compressed body that decodes within the limit is served.
  const std::string json = R"({"prompt": "hi", "max_tokens": 2})";
  z_stream z{};
  ASSERT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string gz(deflateBound(&z, json.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(json.data()));
  z.avail_in = static_cast<uInt>(json.size());
  z.next_out = reinterpret_cast<Bytef*>(gz.data());
  z.avail_out = static_cast<uInt>(gz.size());
  ASSERT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  gz.resize(z.total_out);
  deflateEnd(&z);
  const std::string ok = Exchange(s.port(),
                                  RequestHead("POST", "/v1/completions",
                                              "Content-Encoding: gzip\r\nContent-Length: " +
                                                  std::to_string(gz.size()) + "\r\n"),
                                  gz);
  EXPECT_EQ(StatusOf(ok), 200) << ok;
}

// A body that trickles in slower than body_timeout is a 400 and the connection is closed,
// so a slow body holds a worker for at most that long.
TEST(BodyLimits, BodyNotCompleteByTheBodyTimeoutIs400) {
  HttpServerOptions options;
  options.body_timeout = core::Millis(300);
  ScriptedServer s(options);
  RawClient c(s.port());
  c.Send(RequestHead("POST", "/v1/completions", "Content-Length: 100\r\n") + "{\"prompt\": ");
  EXPECT_EQ(StatusOf(c.ReadUntil(HasWholeResponse)), 400) << c.received();
  EXPECT_TRUE(c.ReadUntilClosed(core::Seconds(5)));
  EXPECT_EQ(s.backend().calls(), 0);
}

}  // namespace
}  // namespace smartgen::server::testing
