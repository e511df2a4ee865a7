// The request-body rules as plain functions: framing checked before reading, and the limit
// held while reading (the reader stops being fed once the limit is passed).
#include "server/request_body.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace smartgen::server {
namespace {

httplib::Request Req(const std::string& method,
                     const std::vector<std::pair<std::string, std::string>>& headers) {
  httplib::Request r;
  r.method = method;
  r.path = "/v1/completions";
  for (const auto& [k, v] : headers) r.headers.emplace(k, v);
  return r;
}

int StatusOf(const std::optional<ApiError>& e) {
  return e ? e->http_status : 0;
}

TEST(RequestBody, FramingIsCheckedBeforeReading) {
  constexpr std::size_t kMax = 1000;
  struct Case {
    std::string method;
    std::vector<std::pair<std::string, std::string>> headers;
    bool takes_body;
    int status;  // 0: may be read
  };
  const std::vector<Case> cases = {
      {"POST", {{"Content-Length", "10"}}, true, 0},
      {"POST", {{"Content-Length", "1000"}}, true, 0},
      {"POST", {{"Content-Length", "1001"}}, true, 413},
      {"POST", {{"Content-Length", "99999999999999999999999"}}, true, 400},  // not a u64
      {"POST", {{"Content-Length", "-1"}}, true, 400},
      {"POST", {{"Content-Length", " 5"}}, true, 400},
      {"POST", {{"Content-Length", "5"}, {"Content-Length", "5"}}, true, 400},
      {"POST", {{"Transfer-Encoding", "chunked"}}, true, 0},
      {"POST", {{"Transfer-Encoding", "Chunked"}}, true, 0},
      {"POST", {{"Transfer-Encoding", "gzip, chunked"}}, true, 501},
      {"POST", {{"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"}}, true, 501},
      {"POST", {{"Content-Length", "5"}, {"Transfer-Encoding", "chunked"}}, true, 400},
      {"POST", {}, true, 411},
      {"POST", {{"Content-Length", "0"}}, true, 0},
      {"POST", {{"Content-Length", "10"}}, false, 404},  // a route that reads no body
      {"POST", {}, false, 0},
      {"GET", {}, false, 0},
      {"GET", {{"Content-Length", "3"}}, false, 400},
      {"GET", {{"Transfer-Encoding", "chunked"}}, false, 400},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.method +
                 (c.headers.empty() ? "" : " " + c.headers[0].first + ": " + c.headers[0].second));
    EXPECT_EQ(StatusOf(CheckBodyFraming(Req(c.method, c.headers), c.takes_body, kMax)), c.status);
  }
  EXPECT_EQ(CheckBodyFraming(Req("POST", {{"Content-Length", "1001"}}), true, kMax)->code,
            "request_too_large");
}

// A reader that offers `chunks` one by one and counts how many were taken.
struct FakeBody {
  std::vector<std::string> chunks;
  bool fails_after = false;  // the connection breaks after the last chunk
  int offered = 0;
  httplib::ContentReader Reader() {
    return httplib::ContentReader(
        [this](httplib::ContentReceiver receive) {
          for (const std::string& c : chunks) {
            ++offered;
            if (!receive(c.data(), c.size())) return false;
          }
          return !fails_after;
        },
        nullptr);
  }
};

TEST(RequestBody, ReadingStopsAtTheLimit) {
  FakeBody ok{{"ab", "cd", "ef"}};
  std::string body;
  EXPECT_FALSE(ReadBodyWithin(ok.Reader(), 6, &body).has_value());
  EXPECT_EQ(body, "abcdef");

  FakeBody big{std::vector<std::string>(100, std::string(100, 'x'))};
  std::string partial;
  const auto error = ReadBodyWithin(big.Reader(), 250, &partial);
  EXPECT_EQ(StatusOf(error), 413);
  EXPECT_LE(partial.size(), 250u);  // never more than the limit buffered
  EXPECT_EQ(big.offered, 3);        // and nothing read after it was passed

  FakeBody broken{{"ab"}, /*fails_after=*/true};
  std::string cut;
  EXPECT_EQ(StatusOf(ReadBodyWithin(broken.Reader(), 100, &cut)), 400);
}

}  // namespace
}  // namespace smartgen::server
