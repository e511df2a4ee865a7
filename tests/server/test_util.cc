#include "test_util.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "server/sse.h"

namespace smartgen::server::testing {
namespace {

std::unique_ptr<httplib::Client> MakeClient(int port) {
  auto client = std::make_unique<httplib::Client>("127.0.0.1", port);
  client->set_connection_timeout(5, 0);
  client->set_read_timeout(15, 0);
  client->set_write_timeout(5, 0);
  return client;
}

HttpReply FromResult(const httplib::Result& result) {
  HttpReply reply;
  if (!result) return reply;
  reply.status = result->status;
  reply.body = result->body;
  reply.content_type = result->get_header_value("Content-Type");
  reply.body_json = json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  if (reply.body_json.is_discarded()) reply.body_json = nullptr;
  return reply;
}

}  // namespace

HttpReply Post(int port, const std::string& path, const std::string& body,
               const httplib::Headers& headers) {
  return FromResult(MakeClient(port)->Post(path, headers, body, "application/json"));
}

HttpReply PostJson(int port, const std::string& path, const json& body,
                   const httplib::Headers& headers) {
  return Post(port, path, body.dump(), headers);
}

HttpReply Get(int port, const std::string& path, const httplib::Headers& headers) {
  return FromResult(MakeClient(port)->Get(path, headers));
}

std::string StreamReply::Text() const {
  std::string text;
  for (const json& c : chunks) {
    if (!c.contains("choices") || c["choices"].empty()) continue;
    const json& choice = c["choices"][0];
    if (choice.contains("text")) text += choice["text"].get<std::string>();
    if (choice.contains("delta") && choice["delta"].contains("content")) {
      text += choice["delta"]["content"].get<std::string>();
    }
  }
  return text;
}

StreamReply PostStream(int port, const std::string& path, const json& body,
                       const httplib::Headers& headers) {
  StreamReply reply;
  SseParser parser;
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.headers = headers;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
    reply.raw.append(data, n);
    parser.Feed(std::string_view(data, n), &reply.events);
    return true;
  };
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  if (!MakeClient(port)->send(req, res, error)) return reply;
  reply.status = res.status;
  reply.content_type = res.get_header_value("Content-Type");
  for (const std::string& e : reply.events) {
    if (e == kSseDone) {
      ++reply.done_count;
      continue;
    }
    json chunk = json::parse(e, nullptr, false);
    EXPECT_FALSE(chunk.is_discarded()) << "not JSON: " << e;
    if (!chunk.is_discarded()) reply.chunks.push_back(std::move(chunk));
  }
  reply.done_last = !reply.events.empty() && reply.events.back() == kSseDone;
  return reply;
}

// The series without its model_name="..." label (every server series has one).
static std::string WithoutModelName(std::string series) {
  const std::size_t at = series.find("model_name=\"");
  if (at == std::string::npos) return series;
  const std::size_t close = series.find('"', at + 12);
  if (close == std::string::npos) return series;
  std::size_t end = close + 1;
  if (end < series.size() && series[end] == ',') ++end;
  series.erase(at, end - at);
  if (series.size() >= 2 && series.compare(series.size() - 2, 2, "{}") == 0) {
    series.resize(series.size() - 2);
  } else if (series.size() >= 2 && series.compare(series.size() - 2, 2, ",}") == 0) {
    series.erase(series.size() - 2, 1);
  }
  return series;
}

std::map<std::string, double> ParseMetrics(const std::string& text) {
  std::map<std::string, double> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    if (line[0] == '#') {
      EXPECT_TRUE(line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) << line;
      continue;
    }
    const std::size_t space = line.rfind(' ');
    if (space == std::string::npos) {
      ADD_FAILURE() << "malformed metrics line: " << line;
      continue;
    }
    const std::string series = WithoutModelName(line.substr(0, space));
    const std::string value = line.substr(space + 1);
    char* parse_end = nullptr;
    double v = std::strtod(value.c_str(), &parse_end);
    if (value == "+Inf") v = INFINITY;
    EXPECT_TRUE(value == "+Inf" || value == "NaN" || *parse_end == '\0') << line;
    EXPECT_EQ(out.count(series), 0u) << "duplicate series " << series;
    out[series] = v;
  }
  return out;
}

double Metric(const std::map<std::string, double>& metrics, const std::string& series) {
  const auto it = metrics.find(series);
  return it == metrics.end() ? 0.0 : it->second;
}

bool WaitFor(const std::function<bool()>& pred, core::Nanos timeout) {
  const core::Deadline deadline = core::Deadline::After(timeout);
  while (!pred()) {
    if (deadline.Expired()) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

ScriptedServer::ScriptedServer(HttpServerOptions options, std::int64_t context_length)
    : backend_(std::make_unique<ScriptedBackend>(context_length)) {
  options.host = "127.0.0.1";
  options.port = 0;
  options.keep_alive_timeout_s = 1;
  server_ = std::make_unique<HttpServer>(backend_.get(), std::move(options));
  const Status started = server_->Start();
  EXPECT_TRUE(started.ok()) << started.ToString();
}

ScriptedServer::~ScriptedServer() {
  backend_->OpenGate();
  server_->Stop();
}

}  // namespace smartgen::server::testing
