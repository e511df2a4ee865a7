// Helpers for the server tests: an in-process server on an ephemeral port with a scripted
// backend, bounded HTTP calls through httplib::Client, SSE collection, and a Prometheus text
// parser.
#pragma once

#include <httplib.h>

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/clock.h"
#include "scripted_backend.h"
#include "server/http_server.h"

namespace smartgen::server::testing {

using nlohmann::json;

struct HttpReply {
  int status = 0;  // 0: no response (connection error)
  std::string body;
  std::string content_type;
  json body_json;  // null unless the body is JSON
};

HttpReply Post(int port, const std::string& path, const std::string& body,
               const httplib::Headers& headers = {});
HttpReply PostJson(int port, const std::string& path, const json& body,
                   const httplib::Headers& headers = {});
HttpReply Get(int port, const std::string& path, const httplib::Headers& headers = {});

struct StreamReply {
  int status = 0;
  std::string content_type;
  std::string raw;                  // every byte received
  std::vector<std::string> events;  // SSE data payloads in order
  std::vector<json> chunks;         // the events that are JSON (all but [DONE])
  int done_count = 0;               // [DONE] events
  bool done_last = false;           // the last event is [DONE]
  // choices[0].text (completions) or choices[0].delta.content (chat), concatenated.
  std::string Text() const;
};

// POSTs with `stream: true` semantics and reads the SSE body as it arrives.
StreamReply PostStream(int port, const std::string& path, const json& body,
                       const httplib::Headers& headers = {});

// {"name{labels}": value} of every sample; ADD_FAILUREs on a malformed line. The model_name
// label every server series carries is left out of the keys (lookups name the others).
std::map<std::string, double> ParseMetrics(const std::string& text);
double Metric(const std::map<std::string, double>& metrics, const std::string& series);

// Polls pred() every millisecond until it holds or `timeout` passes; returns pred().
bool WaitFor(const std::function<bool()>& pred, core::Nanos timeout = core::Seconds(5));

// An HttpServer on 127.0.0.1:<ephemeral> serving a ScriptedBackend.
class ScriptedServer {
 public:
  explicit ScriptedServer(HttpServerOptions options = {}, std::int64_t context_length = 4096);
  ~ScriptedServer();
  ScriptedBackend& backend() { return *backend_; }
  HttpServer& server() { return *server_; }
  int port() const { return server_->port(); }
  std::map<std::string, double> Metrics() { return ParseMetrics(server_->MetricsText()); }

 private:
  std::unique_ptr<ScriptedBackend> backend_;
  std::unique_ptr<HttpServer> server_;
};

}  // namespace smartgen::server::testing
