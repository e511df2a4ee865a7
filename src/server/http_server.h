// HttpServer: the OpenAI-compatible HTTP front of smartgen (DESIGN.md section 7), serving a
// CompletionBackend (the router, or a single-process engine).
//
//   POST /v1/completions        prompt (text or token ids) -> text
//   POST /v1/chat/completions   messages -> the model's chat template -> text
//        both: `stream: true` as server-sent events ending in `data: [DONE]`; request fields
//        in openai_request.h, response shapes in openai_response.h; the `smartgen` extension
//        object in, per-request figures (backend stats + server-measured ttft_ms, ttst_ms,
//        tbt_ms, e2e_ms; token_ids on request) out in the response's `smartgen` object (in
//        the last JSON chunk of a stream)
//   GET  /v1/models             the one served model
//   GET  /health                200 {"status":"ok"}, or 503 with the backend's reason
//   GET  /metrics               Prometheus text: server_metrics.h plus the backend's
//
// Defaults are safe: loopback only; with an api_key every /v1/ route needs
// `Authorization: Bearer <key>` (401 otherwise; /health and /metrics stay open, as in vLLM);
// bodies over max_body_bytes get 413; prompt tokens + max_tokens past the context get 400
// (code context_length_exceeded); more than max_concurrent generations at once get 429; a
// `model` naming another model gets 404 (code model_not_found); every request has a deadline
// (504); malformed JSON and wrong field types get 400 naming the field. Errors are OpenAI
// error objects. A streaming client that disconnects cancels its generation at the next
// token (or SSE keep-alive comment) the server fails to write; a non-streaming request runs to
// its end or its deadline. Streaming requests answer with an HTTP error status when they fail
// before their first token, and with an error event (then [DONE]) when they fail later.
//
// Thread-safety: Start() and Stop() from one owning thread; requests are served on an
// internal pool of `threads` threads (one per open connection; a streaming request holds its
// thread until it ends).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/clock.h"
#include "core/status.h"
#include "server/completion_backend.h"

namespace smartgen::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // "0.0.0.0" to listen on every interface
  int port = 0;                    // 0: an ephemeral port (see HttpServer::port())
  std::string api_key;             // "" = no authentication
  std::size_t max_body_bytes = std::size_t{4} << 20;
  int max_concurrent = 64;                           // generations at once; more get 429
  core::Nanos request_timeout = core::Seconds(600);  // per request, arrival to last token
  int threads = 0;                                   // HTTP worker threads; 0 = max_concurrent + 8
  int keep_alive_timeout_s = 5;   // idle keep-alive connections are closed after this
  int default_max_tokens = 16;    // /v1/completions without max_tokens (OpenAI's default);
                                  // chat defaults to the rest of the context
  std::string served_model_name;  // "" = the backend's model_name()
  core::Nanos sse_keepalive = core::Seconds(10);  // SSE comment after this much silence

  // One line, every field (the API key masked), for the start-up log.
  std::string ToString() const;
};

class HttpServer {
 public:
  // `backend` must outlive the server.
  HttpServer(CompletionBackend* backend, HttpServerOptions options);
  ~HttpServer();  // Stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving in the background. kInvalidArgument for bad options,
  // kUnavailable when the address cannot be bound, kFailedPrecondition if already started.
  Status Start();
  // Stops accepting, cancels every running generation (their clients get a 503 or a stream
  // error event), waits for the worker threads, and returns. Idempotent.
  void Stop();

  // The bound port (after Start()); 0 before.
  int port() const;
  const HttpServerOptions& options() const;
  // What GET /metrics returns.
  std::string MetricsText() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace smartgen::server
