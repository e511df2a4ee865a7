#include "node/common/http_rpc.h"

#include "core/log.h"
#include "node/common/control_auth.h"
#include "node/common/node_config.h"
#include "node/common/protocol.h"
#include "transfer/socket.h"

namespace smartgen::node {
namespace {

int HttpStatus(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return 200;
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kUnimplemented: return 400;
    case StatusCode::kPermissionDenied: return 401;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kResourceExhausted: return 429;
    case StatusCode::kUnavailable: return 503;
    case StatusCode::kDeadlineExceeded: return 504;
    default: return 500;
  }
}

Status ReplyToStatus(const httplib::Result& r) {
  if (!r) {
    const auto err = r.error();
    if (err == httplib::Error::Read || err == httplib::Error::Write) {
      return Unavailable("connection to node lost ({})", httplib::to_string(err));
    }
    return Unavailable("node unreachable ({})", httplib::to_string(err));
  }
  if (r->status == 200) return Status::Ok();
  auto j = ParseJsonText(r->body);
  if (j.ok() && j->contains("error")) return StatusFromJson((*j)["error"]);
  return Unavailable("node answered HTTP {}", r->status);
}

void SetTimeouts(httplib::Client& cli, core::Nanos timeout) {
  const auto secs = static_cast<time_t>(timeout / core::kNanosPerSecond);
  const auto usecs = static_cast<time_t>((timeout % core::kNanosPerSecond) / 1000);
  cli.set_connection_timeout(std::min<time_t>(secs, 5), secs >= 5 ? 0 : usecs);
  cli.set_read_timeout(secs, usecs);
  cli.set_write_timeout(secs, usecs);
}

httplib::Headers AuthHeaders(const NodeAddress& node, std::string_view method, const std::string& path,
                             std::string_view body) {
  if (node.token.empty()) return {};
  return SignHeaders(node.token, method, path, body, node.caller);
}

}  // namespace

httplib::Server::Handler Authenticated(RequestVerifier* verifier, core::Counter* refused,
                                       httplib::Server::Handler handler) {
  return [verifier, refused, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
    const Status st = verifier->Verify(req);
    if (!st.ok()) {
      refused->Increment();
      SG_LOG_WARN("auth", "refused {} {} from {}: {}", req.method, req.path, req.remote_addr, st.ToString());
      return ReplyStatus(res, st);
    }
    handler(req, res);
  };
}

Result<int> StartNodeHttp(httplib::Server& http, const std::string& host, int port,
                          std::function<std::string()> metrics_text, std::thread* thread) {
  http.Get("/health", [](const httplib::Request&, httplib::Response& s) { s.set_content("ok\n", "text/plain"); });
  http.Get("/metrics", [metrics_text = std::move(metrics_text)](const httplib::Request&, httplib::Response& s) {
    s.set_content(metrics_text(), "text/plain; version=0.0.4");
  });
  http.new_task_queue = [] { return new httplib::ThreadPool(256); };
  const int bound = port == 0 ? http.bind_to_any_port(host) : (http.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) return Unavailable("cannot bind HTTP on {}:{}", host, port);
  *thread = std::thread([&http] { http.listen_after_bind(); });
  // httplib's stop() does nothing until the listening thread is running: a node stopped right
  // after it started would otherwise wait on that thread forever.
  const core::Deadline ready = core::Deadline::After(core::Seconds(10));
  while (!http.is_running() && !ready.Expired()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!http.is_running()) return Unavailable("HTTP on {}:{} did not start within 10 s", host, bound);
  return bound;
}

void ReplyJson(httplib::Response& res, const nlohmann::json& body) {
  res.status = 200;
  res.set_content(body.dump(), "application/json");
}

void ReplyStatus(httplib::Response& res, const Status& status) {
  res.status = HttpStatus(status.code());
  res.set_content(nlohmann::json{{"error", StatusToJson(status)}}.dump(), "application/json");
}

void LineQueue::Push(std::string line) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    lines_.push_back(std::move(line));
  }
  cv_.notify_all();
}

void LineQueue::Close(std::string last_line) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    lines_.push_back(std::move(last_line));
    closed_ = true;
  }
  cv_.notify_all();
}

bool LineQueue::Pop(std::string* line, bool* got, core::Nanos wait) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::nanoseconds(wait), [&] { return !lines_.empty() || closed_; });
  *got = false;
  if (!lines_.empty()) {
    *line = std::move(lines_.front());
    lines_.pop_front();
    *got = true;
    return true;
  }
  return !closed_;
}

void StreamLines(httplib::Response& res, std::shared_ptr<LineQueue> queue,
                 std::function<void()> on_disconnect) {
  auto finished = std::make_shared<bool>(false);
  auto last_write = std::make_shared<core::Nanos>(core::NowNanos());
  res.set_chunked_content_provider(
      "application/x-ndjson",
      [queue, finished, last_write, on_disconnect](std::size_t, httplib::DataSink& sink) {
        std::string line;
        bool got = false;
        // Short waits so a vanished client is noticed between events.
        const bool more = queue->Pop(&line, &got, core::Millis(100));
        if (!got && more && core::NowNanos() - *last_write >= kStreamAliveInterval) {
          line = R"({"event":"alive"})";  // tells the reader this node is not hung
          got = true;
        }
        if (got) {
          line += '\n';
          if (!sink.write(line.data(), line.size())) return false;
          *last_write = core::NowNanos();
        } else if (more && !sink.is_writable()) {
          return false;
        }
        if (!more) {
          *finished = true;
          sink.done();
        }
        return true;
      },
      [finished, on_disconnect](bool success) {
        if (!*finished && on_disconnect) on_disconnect();
      });
}

std::string NodeAddress::ToString() const {
  return transfer::FormatHostPort(host, static_cast<std::uint16_t>(port));  // [v6]:port
}

Result<NodeAddress> ParseNodeAddress(const std::string& text) {
  std::string rest = text;
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  NodeAddress a;
  SG_RETURN_IF_ERROR(SplitHostPort(rest, &a.host, &a.port));
  if (a.port == 0) return InvalidArgument("node address '{}' needs a port", text);
  return a;
}

Result<nlohmann::json> PostJson(const NodeAddress& node, const std::string& path,
                                const nlohmann::json& body, core::Nanos timeout) {
  std::unique_ptr<httplib::Client> client = MakeControlClient(node.host, node.port, node.tls.get());
  httplib::Client& cli = *client;
  SetTimeouts(cli, timeout);
  const std::string text = body.dump();
  auto r = cli.Post(path, AuthHeaders(node, "POST", path, text), text, "application/json");
  SG_RETURN_IF_ERROR(ReplyToStatus(r).WithContext(fmt::format("{} {}", node.ToString(), path)));
  return ParseJsonText(r->body);
}

Result<nlohmann::json> GetJson(const NodeAddress& node, const std::string& path,
                               core::Nanos timeout) {
  std::unique_ptr<httplib::Client> client = MakeControlClient(node.host, node.port, node.tls.get());
  httplib::Client& cli = *client;
  SetTimeouts(cli, timeout);
  auto r = cli.Get(path, AuthHeaders(node, "GET", path, ""));
  SG_RETURN_IF_ERROR(ReplyToStatus(r).WithContext(fmt::format("{} {}", node.ToString(), path)));
  return ParseJsonText(r->body);
}

Status GetOk(const NodeAddress& node, const std::string& path, core::Nanos timeout) {
  std::unique_ptr<httplib::Client> client = MakeControlClient(node.host, node.port, node.tls.get());
  httplib::Client& cli = *client;
  SetTimeouts(cli, timeout);
  auto r = cli.Get(path, AuthHeaders(node, "GET", path, ""));
  return ReplyToStatus(r).WithContext(fmt::format("{} {}", node.ToString(), path));
}

void AbortableCall::Abort() {
  std::lock_guard<std::mutex> lock(mu_);
  aborted_ = true;
  if (client_ != nullptr) client_->stop();
}

bool AbortableCall::aborted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return aborted_;
}

bool AbortableCall::Attach(httplib::Client* client) {
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_) return false;
  client_ = client;
  return true;
}

void AbortableCall::Detach() {
  std::lock_guard<std::mutex> lock(mu_);
  client_ = nullptr;
}

Result<nlohmann::json> AbortableCall::PostJson(const NodeAddress& node, const std::string& path,
                                               const nlohmann::json& body, core::Nanos timeout) {
  std::unique_ptr<httplib::Client> client = MakeControlClient(node.host, node.port, node.tls.get());
  httplib::Client& cli = *client;
  SetTimeouts(cli, timeout);
  if (!Attach(&cli)) return Cancelled("{} {}: aborted", node.ToString(), path);
  const std::string text = body.dump();
  auto r = cli.Post(path, AuthHeaders(node, "POST", path, text), text, "application/json");
  Detach();
  if (aborted()) return Cancelled("{} {}: aborted", node.ToString(), path);
  SG_RETURN_IF_ERROR(ReplyToStatus(r).WithContext(fmt::format("{} {}", node.ToString(), path)));
  return ParseJsonText(r->body);
}

Status PostStream(const NodeAddress& node, const std::string& path, const nlohmann::json& body,
                  core::Nanos timeout, const std::function<bool(const nlohmann::json&)>& on_line,
                  AbortableCall* abort) {
  std::unique_ptr<httplib::Client> client = MakeControlClient(node.host, node.port, node.tls.get());
  httplib::Client& cli = *client;
  SetTimeouts(cli, timeout);
  if (abort != nullptr && !abort->Attach(&cli)) return Cancelled("{}{}: aborted", node.ToString(), path);
  struct Detacher {
    AbortableCall* a;
    ~Detacher() {
      if (a) a->Detach();
    }
  } detacher{abort};
  std::string pending;
  Status parse_error;
  bool stopped = false;
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  for (const auto& [k, v] : AuthHeaders(node, "POST", path, req.body)) req.set_header(k.c_str(), v.c_str());
  int http_status = 0;
  std::string error_body;
  req.response_handler = [&](const httplib::Response& response) {
    http_status = response.status;
    return true;
  };
  req.content_receiver = [&](const char* data, std::size_t len, std::uint64_t, std::uint64_t) {
    if (http_status != 200) {
      error_body.append(data, len);
      return true;
    }
    pending.append(data, len);
    std::size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      const std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (line.empty()) continue;
      auto j = ParseJsonText(line);
      if (!j.ok()) {
        parse_error = DataLoss("bad stream line from {}: {}", node.ToString(), j.status().message());
        return false;
      }
      if (!on_line(*j)) {
        stopped = true;
        return false;
      }
    }
    return true;
  };
  auto r = cli.send(req);
  if (abort != nullptr && abort->aborted()) return Cancelled("{}{}: aborted", node.ToString(), path);
  if (!parse_error.ok()) return parse_error;
  if (stopped) return Status::Ok();
  if (!r) {
    return Unavailable("stream from {}{} broke ({})", node.ToString(), path,
                       httplib::to_string(r.error()));
  }
  if (r->status != 200) {
    auto j = ParseJsonText(error_body.empty() ? r->body : error_body);
    if (j.ok() && j->contains("error")) return StatusFromJson((*j)["error"]);
    return Unavailable("{}{} answered HTTP {}", node.ToString(), path, r->status);
  }
  return Status::Ok();
}

}  // namespace smartgen::node
