#include "server/http_server.h"

#include <fmt/ranges.h>
#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <exception>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_set>

#include "core/log.h"
#include "core/metrics.h"
#include "core/process_metrics.h"
#include "server/admission_queue.h"
#include "server/api_error.h"
#include "server/auth.h"
#include "server/completion_session.h"
#include "server/connection_server.h"
#include "server/generation_setup.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/request_body.h"
#include "server/server_metrics.h"
#include "server/tokenize_api.h"
#include "tokenizer/chat_template.h"

namespace smartgen::server {
namespace {

using nlohmann::json;

constexpr const char* kJson = "application/json";

void Reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(DumpJson(body), kJson);
}

void ReplyError(httplib::Response& res, const ApiError& error) {
  Reply(res, error.http_status, ApiErrorJson(error));
}

std::optional<Endpoint> EndpointForPath(const std::string& path) {
  if (path == "/v1/completions") return Endpoint::kCompletions;
  if (path == "/v1/chat/completions") return Endpoint::kChatCompletions;
  return std::nullopt;
}

std::uint64_t SplitMix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

std::string HttpServerOptions::ToString() const {
  return fmt::format(
      "host={} port={} api_key={} max_body_bytes={} max_concurrent={} max_queued={} "
      "queue_timeout_s={} retry_after_s={} request_timeout_s={} threads={} "
      "keep_alive_timeout_s={} header_timeout_s={} body_timeout_s={} write_timeout_s={} "
      "max_connections={} max_header_bytes={} client_poll_s={} tls={} default_max_tokens={} "
      "served_model_names={} chat_template={} sse_keepalive_s={}",
      host, port, api_key.empty() ? "(none)" : "(set)", max_body_bytes, max_concurrent, max_queued,
      core::ToSeconds(queue_timeout), retry_after_s, core::ToSeconds(request_timeout), threads,
      keep_alive_timeout_s, core::ToSeconds(header_timeout), core::ToSeconds(body_timeout),
      core::ToSeconds(write_timeout), max_connections, max_header_bytes,
      core::ToSeconds(client_poll), tls_cert_file.empty() ? "off" : tls_cert_file,
      default_max_tokens,
      served_model_names.empty() ? "(backend)" : fmt::format("{}", fmt::join(served_model_names, ",")),
      chat_template.empty() ? "(model)" : chat_template, core::ToSeconds(sse_keepalive));
}

struct HttpServer::Impl {
  Impl(CompletionBackend* b, HttpServerOptions o)
      : backend(b),
        options(std::move(o)),
        metrics(&registry, ModelNames().front()),
        admission_queue({options.max_concurrent, options.max_queued, options.queue_timeout,
                         std::min(options.client_poll, core::Millis(100))}) {
    std::random_device rd;
    seed_base = (std::uint64_t{rd()} << 32) ^ rd();
  }

  // One admitted generation: holds its concurrency slot and its place in `sessions` until
  // Finish(), which counts the outcome (a stream calls it before its final [DONE]; otherwise
  // the destructor does, when the response is finished or dropped).
  struct Admission {
    Admission(Impl* i, Endpoint e, AdmissionQueue::Ticket t) : impl(i), endpoint(e) {
      ticket.emplace(std::move(t));
    }
    Admission(const Admission&) = delete;
    Admission& operator=(const Admission&) = delete;
    ~Admission() {
      Finish(499);      // never finished: the client went away first
      session.reset();  // cancels and joins the generation thread
    }

    void Finish(int http_status) {
      if (finished) return;
      finished = true;
      impl->metrics.CountRequest(endpoint, http_status);
      if (session) {
        std::lock_guard<std::mutex> lock(impl->sessions_mu);
        impl->sessions.erase(session.get());
      }
      impl->metrics.in_flight.Decrement();
      ticket.reset();  // the slot goes to the next in line
    }

    Impl* impl;
    Endpoint endpoint;
    std::optional<AdmissionQueue::Ticket> ticket;
    std::shared_ptr<CompletionSession> session;
    bool finished = false;
  };

  void Routes();
  // Reads the request body into `body` (request_body.h); false after replying 413/400.
  bool ReadBody(const httplib::ContentReader& reader, httplib::Response& res, Endpoint endpoint,
                std::string* body);
  // Checks that happen before any byte of the body is read; false after replying.
  bool CheckBeforeBody(const httplib::Request& req, httplib::Response& res);
  void HandleCompletion(const std::string& body, httplib::Response& res, Endpoint endpoint);
  // POST /tokenize and /detokenize.
  void HandleTokenize(const std::string& body, httplib::Response& res, bool detokenize);
  // A 404 (model_not_found) when `model` is given and not one of the served names.
  std::optional<ApiError> CheckModel(const std::string& model) const {
    if (model.empty() || ServesModel(model)) return std::nullopt;
    return MakeApiError(404,
                        fmt::format("The model '{}' does not exist; this server serves '{}'", model,
                                    fmt::join(ModelNames(), "', '")),
                        "model_not_found", "model");
  }
  std::string NewId(Endpoint endpoint) {
    const std::uint64_t n = next_id.fetch_add(1, std::memory_order_relaxed);
    return fmt::format("{}-{:016x}", endpoint == Endpoint::kChatCompletions ? "chatcmpl" : "cmpl",
                       SplitMix64(seed_base ^ n));
  }
  std::string Text() {
    metrics.queued.Set(admission_queue.queued());
    std::string out;
    registry.AppendText(&out);
    backend->AppendMetrics(&out);
    core::AppendProcessMetrics(&out, "server");
    return out;
  }
  std::vector<std::string> ModelNames() const {
    if (options.served_model_names.empty()) return {backend->model_name()};
    return options.served_model_names;
  }
  bool ServesModel(const std::string& name) const {
    const std::vector<std::string> names = ModelNames();
    return std::find(names.begin(), names.end(), name) != names.end();
  }

  CompletionBackend* backend;
  HttpServerOptions options;
  core::MetricsRegistry registry;
  ServerMetrics metrics;
  AdmissionQueue admission_queue;
  std::unique_ptr<ConnectionServer> http;  // made by Start()
  std::thread listener;
  int bound_port = 0;
  int listen_fd = -1;
  bool started = false;
  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> next_id{0};
  std::atomic<std::uint64_t> next_seed{0};
  std::uint64_t seed_base = 0;
  std::int64_t created = std::time(nullptr);

  std::mutex sessions_mu;
  std::unordered_set<CompletionSession*> sessions;
};

void HttpServer::Impl::HandleCompletion(const std::string& body, httplib::Response& res,
                                        Endpoint endpoint) {
  const core::Nanos arrival = core::NowNanos();
  auto fail = [&](const ApiError& error) {
    metrics.CountRequest(endpoint, error.http_status);
    ReplyError(res, error);
  };
  if (stopping.load()) return fail(MakeApiError(503, "the server is shutting down"));

  std::string param;
  Result<CompletionRequest> parsed = ParseCompletionRequest(body, endpoint, &param);
  if (!parsed.ok()) return fail(ApiErrorFromStatus(parsed.status(), param));
  const CompletionRequest& r = *parsed;
  if (std::optional<ApiError> error = CheckModel(r.model)) return fail(*error);
  PreparedGeneration prepared;
  const std::uint64_t drawn_seed =
      SplitMix64(~seed_base ^ next_seed.fetch_add(1, std::memory_order_relaxed));
  if (std::optional<ApiError> error = PrepareGeneration(
          r, *backend, options.default_max_tokens, drawn_seed, options.chat_template, &prepared)) {
    return fail(*error);
  }
  GenerationRequest& g = prepared.request;

  // Admission: a slot of max_concurrent, or a place in line for one; the slot is held until
  // the response is finished.
  g.deadline = core::Deadline::After(options.request_timeout);
  AdmissionQueue::Ticket ticket =
      admission_queue.Acquire(g.deadline, [] { return ConnectionServer::CurrentClientGone(); });
  if (!ticket.admitted()) {
    switch (ticket.outcome()) {
      case AdmissionQueue::Outcome::kAbandoned:
        metrics.CountRequest(endpoint, 499);
        ConnectionServer::CloseCurrentAfterResponse();
        return ReplyError(res, MakeApiError(499, "the client closed the connection"));
      case AdmissionQueue::Outcome::kClosed:
        return fail(MakeApiError(503, "the server is shutting down"));
      default:
        res.set_header("Retry-After", std::to_string(options.retry_after_s));
        return fail(MakeApiError(
            429,
            ticket.outcome() == AdmissionQueue::Outcome::kQueueFull
                ? fmt::format("the server is busy ({} requests running, {} waiting); retry "
                              "later",
                              options.max_concurrent, options.max_queued)
                : fmt::format("the server is busy: no generation slot came free in {} s; "
                              "retry later",
                              core::ToSeconds(ticket.waited())),
            "rate_limit_exceeded"));
    }
  }
  metrics.queue_seconds.Observe(core::ToSeconds(ticket.waited()));
  metrics.in_flight.Increment();
  auto admission = std::make_shared<Admission>(this, endpoint, std::move(ticket));

  g.request_id = NewId(endpoint);
  metrics.prompt_tokens.Increment(static_cast<double>(g.prompt.size()));
  metrics.request_prompt_tokens.Observe(static_cast<double>(g.prompt.size()));
  SessionSetup setup;
  setup.header = {endpoint, g.request_id, static_cast<std::int64_t>(std::time(nullptr)),
                  r.model.empty() ? ModelNames().front() : r.model};
  setup.prompt_tokens = static_cast<std::int64_t>(g.prompt.size());
  setup.stop = r.stop;
  setup.echo = std::move(prepared.echo);
  setup.include_usage = r.include_usage;
  setup.return_token_ids = r.return_token_ids;
  setup.arrival = arrival;
  setup.keepalive_interval = options.sse_keepalive;
  setup.client_gone = [] { return ConnectionServer::CurrentClientGone(); };
  setup.client_poll = options.client_poll;
  admission->session =
      std::make_shared<CompletionSession>(backend, std::move(g), std::move(setup), &metrics);
  CompletionSession* session = admission->session.get();
  {
    std::lock_guard<std::mutex> lock(sessions_mu);
    sessions.insert(session);
  }
  if (stopping.load()) session->Cancel(Unavailable("the server is shutting down"));
  session->Start();

  if (Status first = session->AwaitFirstToken(); !first.ok()) {
    const ApiError error = ApiErrorFromStatus(first);
    admission->Finish(error.http_status);
    return ReplyError(res, error);
  }
  if (!r.stream) {
    Result<json> body = session->Collect();
    if (!body.ok()) {
      const ApiError error = ApiErrorFromStatus(body.status());
      admission->Finish(error.http_status);
      return ReplyError(res, error);
    }
    admission->Finish(200);
    return Reply(res, 200, *body);
  }
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream", [admission](std::size_t, httplib::DataSink& sink) {
        if (!admission->finished) {  // httplib may call again after a failed write
          admission->session->Stream(
              [&sink](std::string_view bytes) { return sink.write(bytes.data(), bytes.size()); },
              [&admission](int outcome) { admission->Finish(outcome); });
          admission->Finish(499);  // no-op unless Stream ended without reporting
        }
        sink.done();
        return true;
      });
}

void HttpServer::Impl::HandleTokenize(const std::string& body, httplib::Response& res,
                                      bool detokenize) {
  std::string model, param;
  Result<json> reply =
      detokenize ? DetokenizeRequest(body, backend->tokenizer(), &model, &param)
                 : TokenizeRequest(body, backend->tokenizer(), backend->context_length(),
                                   options.chat_template, &model, &param);
  if (!reply.ok()) return ReplyError(res, ApiErrorFromStatus(reply.status(), param));
  if (std::optional<ApiError> error = CheckModel(model)) return ReplyError(res, *error);
  Reply(res, 200, *reply);
}

bool HttpServer::Impl::CheckBeforeBody(const httplib::Request& req, httplib::Response& res) {
  const std::optional<Endpoint> endpoint = EndpointForPath(req.path);
  const bool body_route =
      req.method == "POST" &&
      (endpoint.has_value() || req.path == "/tokenize" || req.path == "/detokenize");
  const std::optional<ApiError> error = CheckBodyFraming(req, body_route, options.max_body_bytes);
  if (!error) return true;
  if (endpoint) metrics.CountRequest(*endpoint, error->http_status);
  ReplyError(res, *error);
  ConnectionServer::CloseCurrentAfterResponse();  // the body, if any, stays unread
  return false;
}

bool HttpServer::Impl::ReadBody(const httplib::ContentReader& reader, httplib::Response& res,
                                Endpoint endpoint, std::string* body) {
  const std::optional<ApiError> error = ReadBodyWithin(reader, options.max_body_bytes, body);
  if (!error) return true;
  ConnectionServer::CloseCurrentAfterResponse();  // the rest of the body stays unread
  metrics.CountRequest(endpoint, error->http_status);
  ReplyError(res, *error);
  return false;
}

void HttpServer::Impl::Routes() {
  // Before the body is read: how it is framed and how large it says it is, then the API key
  // (every /v1/ route).
  http->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!CheckBeforeBody(req, res)) return httplib::Server::HandlerResponse::Handled;
    if (options.api_key.empty() || req.path.rfind("/v1/", 0) != 0) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    const Status auth = CheckBearerToken(req.get_header_value("Authorization"), options.api_key);
    if (auth.ok()) return httplib::Server::HandlerResponse::Unhandled;
    if (auto endpoint = EndpointForPath(req.path)) metrics.CountRequest(*endpoint, 401);
    ReplyError(res, ApiErrorFromStatus(auth));
    res.set_header("WWW-Authenticate", "Bearer");
    if (MethodTakesBody(req.method)) ConnectionServer::CloseCurrentAfterResponse();
    return httplib::Server::HandlerResponse::Handled;
  });
  // 100-continue only for a body that may be read.
  http->set_expect_100_continue_handler(
      [this](const httplib::Request& req, httplib::Response& res) {
        const std::optional<ApiError> error =
            CheckBodyFraming(req, /*takes_body=*/true, options.max_body_bytes);
        if (error && error->http_status == 413) {
          ReplyError(res, *error);
          ConnectionServer::CloseCurrentAfterResponse();
          return 413;
        }
        return 100;
      });
  for (const auto& [path, endpoint] :
       {std::pair{"/v1/completions", Endpoint::kCompletions},
        std::pair{"/v1/chat/completions", Endpoint::kChatCompletions}}) {
    const Endpoint e = endpoint;
    http->Post(path, [this, e](const httplib::Request& req, httplib::Response& res,
                               const httplib::ContentReader& reader) {
      std::string body;
      if (ReadBody(reader, res, e, &body)) HandleCompletion(body, res, e);
    });
  }
  http->Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200, ModelList(ModelNames(), created, backend->context_length()));
  });
  // Model ids may hold '/' (e.g. "org/model"): everything after the prefix is the id.
  http->Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    if (std::optional<ApiError> error = CheckModel(id)) return ReplyError(res, *error);
    Reply(res, 200, ModelCard(id, created, backend->context_length()));
  });
  for (const bool detokenize : {false, true}) {
    http->Post(detokenize ? "/detokenize" : "/tokenize",
               [this, detokenize](const httplib::Request&, httplib::Response& res,
                                  const httplib::ContentReader& reader) {
                 std::string body;
                 const std::optional<ApiError> error =
                     ReadBodyWithin(reader, options.max_body_bytes, &body);
                 if (error) {
                   ConnectionServer::CloseCurrentAfterResponse();
                   return ReplyError(res, *error);
                 }
                 HandleTokenize(body, res, detokenize);
               });
  }
  http->Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const Status health =
        stopping.load() ? Unavailable("the server is shutting down") : backend->Health();
    json detail = stopping.load() ? json(nullptr) : backend->HealthDetail();
    if (health.ok()) {
      // 200 while requests can be served; the detail says when a pool is degraded.
      if (!detail.is_object()) detail = json{{"status", "ok"}};
      return Reply(res, 200, detail);
    }
    ApiError error = ApiErrorFromStatus(health);
    error.http_status = 503;
    if (detail.is_object()) {
      detail["error"] = {{"message", error.message}};
      return Reply(res, 503, detail);
    }
    ReplyError(res, error);
  });
  http->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    res.set_content(Text(), "text/plain; version=0.0.4; charset=utf-8");
  });
  // Errors httplib produces itself (no route, bad request line, bad header) get an OpenAI
  // error body too, and the connection is closed (what follows may be unread bytes); responses
  // our handlers built already keep theirs.
  http->set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        ConnectionServer::CloseCurrentAfterResponse();
        std::string message =
            fmt::format("{} {} failed with HTTP {}", req.method, req.path, res.status);
        std::string code;
        if (res.status == 404) {
          message = fmt::format("unknown route: {} {}", req.method, req.path);
          code = "unknown_route";
        } else if (res.status == 413) {
          message = fmt::format("the request body is larger than the limit of {} bytes",
                                options.max_body_bytes);
          code = "request_too_large";
        }
        if (res.status == 413) {
          if (auto endpoint = EndpointForPath(req.path)) metrics.CountRequest(*endpoint, 413);
        }
        ReplyError(res, MakeApiError(res.status, std::move(message), std::move(code)));
        return httplib::Server::HandlerResponse::Handled;
      }));
  http->set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        SG_LOG_ERROR("server", "handler failed: {}", what);
        ReplyError(res, MakeApiError(500, "internal server error: " + what));
      });
}

HttpServer::HttpServer(CompletionBackend* backend, HttpServerOptions options)
    : impl_(std::make_unique<Impl>(backend, std::move(options))) {}

HttpServer::~HttpServer() {
  Stop();
}

Status HttpServer::Start() {
  Impl& s = *impl_;
  if (s.started) return FailedPrecondition("the server was started already");
  const HttpServerOptions& o = s.options;
  if (o.port < 0 || o.port > 65535) return InvalidArgument("port {} is out of range", o.port);
  if (o.max_concurrent < 1) return InvalidArgument("max_concurrent must be at least 1");
  if (o.max_queued < 0) return InvalidArgument("max_queued must not be negative");
  if (o.max_body_bytes < 1) return InvalidArgument("max_body_bytes must be at least 1");
  if (o.request_timeout <= 0) return InvalidArgument("request_timeout must be positive");
  if (o.threads < 0 || o.keep_alive_timeout_s < 1 || o.default_max_tokens < 1) {
    return InvalidArgument("threads, keep_alive_timeout_s or default_max_tokens out of range");
  }
  if (o.header_timeout <= 0 || o.body_timeout <= 0 || o.write_timeout <= 0 || o.queue_timeout < 0 ||
      o.client_poll <= 0) {
    return InvalidArgument(
        "header_timeout, body_timeout, write_timeout and client_poll must be positive, "
        "queue_timeout not negative");
  }
  if (o.max_connections < 1 || o.max_header_bytes < 1024 || o.retry_after_s < 0) {
    return InvalidArgument(
        "max_connections must be at least 1, max_header_bytes at least 1024, retry_after_s "
        "not negative");
  }
  if (o.tls_cert_file.empty() != o.tls_key_file.empty()) {
    return InvalidArgument("TLS needs both tls_cert_file and tls_key_file");
  }
  {
    // The chat template is decided here, once: an override that cannot be used stops the
    // start; a model template that cannot, or none, is a warning (completions still work).
    bool plain = false;
    Result<tokenizer::ChatTemplateKind> kind = tokenizer::ResolveChatTemplate(
        o.chat_template, s.backend->tokenizer().chat_template(), &plain);
    if (!kind.ok() && !o.chat_template.empty()) {
      return InvalidArgument("--chat-template: {}", kind.status().message());
    }
    if (!kind.ok()) {
      SG_LOG_WARN("server", "chat requests will fail: {} (--chat-template NAME overrides it)",
                  kind.status().message());
    } else if (plain) {
      SG_LOG_WARN("server", "the model has no chat template: chat requests get a plain "
                            "completion prompt (--chat-template NAME sets one)");
    }
  }
  std::shared_ptr<TlsContext> tls;
  if (!o.tls_cert_file.empty()) {
    SG_ASSIGN_OR_RETURN(tls, TlsContext::Load(o.tls_cert_file, o.tls_key_file));
  }
  ConnectionLimits limits;
  limits.header_timeout = o.header_timeout;
  limits.body_timeout = o.body_timeout;
  limits.write_timeout = o.write_timeout;
  limits.keep_alive_timeout = core::Seconds(o.keep_alive_timeout_s);
  limits.max_connections = o.max_connections;
  limits.max_header_bytes = o.max_header_bytes;
  limits.workers = o.threads > 0 ? o.threads : o.max_concurrent + o.max_queued + 8;
  s.http = std::make_unique<ConnectionServer>(limits, std::move(tls), &s.registry);
  s.http->set_payload_max_length(o.max_body_bytes);  // a backstop: bodies are checked first
  // httplib only announces these in its Keep-Alive header; ConnectionServer enforces them.
  s.http->set_keep_alive_timeout(o.keep_alive_timeout_s);
  s.http->set_keep_alive_max_count(static_cast<std::size_t>(limits.max_requests_per_connection));
  s.http->set_tcp_nodelay(true);                     // one small write per token: no Nagle delay
  s.http->set_socket_options([&s](socket_t sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    s.listen_fd = sock;
  });
  s.Routes();

  if (o.port == 0) {
    s.bound_port = s.http->bind_to_any_port(o.host);
  } else {
    s.bound_port = s.http->bind_to_port(o.host, o.port) ? o.port : -1;
  }
  if (s.bound_port <= 0) {
    s.bound_port = 0;
    return Unavailable("cannot listen on {}:{} (address in use or not local?)", o.host, o.port);
  }
  // httplib listens with a backlog of 5; a burst of clients needs more.
  if (s.listen_fd >= 0) ::listen(s.listen_fd, SOMAXCONN);
  s.started = true;
  s.listener = std::thread([&s] { s.http->listen_after_bind(); });
  const core::Deadline ready = core::Deadline::After(core::Seconds(10));
  while (!s.http->is_running() && !ready.Expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  SG_LOG_INFO("server", "listening on {}://{}:{} ({})", o.tls_cert_file.empty() ? "http" : "https",
              o.host, s.bound_port, o.ToString());
  return Status::Ok();
}

void HttpServer::Stop() {
  Impl& s = *impl_;
  if (!s.started || s.stopping.exchange(true)) return;
  s.admission_queue.Close();
  {
    std::lock_guard<std::mutex> lock(s.sessions_mu);
    for (CompletionSession* session : s.sessions) {
      session->Cancel(Unavailable("the server is shutting down"));
    }
  }
  s.http->stop();
  if (s.listener.joinable()) s.listener.join();  // joins the connection threads too
  SG_LOG_INFO("server", "stopped listening on port {}", s.bound_port);
}

int HttpServer::port() const {
  return impl_->bound_port;
}

const HttpServerOptions& HttpServer::options() const {
  return impl_->options;
}

std::string HttpServer::MetricsText() const {
  return impl_->Text();
}

}  // namespace smartgen::server
