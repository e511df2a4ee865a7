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
//   GET  /v1/models             the served model, once per name (--served-model-name)
//   GET  /v1/models/{id}        one of them; 404 (model_not_found) for any other id
//   POST /tokenize, /detokenize vLLM's shapes (tokenize_api.h); open like /health
//   GET  /health                200 {"status":"ok"}, or 503 with the backend's reason
//   GET  /metrics               Prometheus text: server_metrics.h plus the backend's
//
// Defaults are safe: loopback only; with an api_key every /v1/ route needs
// `Authorization: Bearer <key>` (401 otherwise; /health and /metrics stay open, as in vLLM);
// prompt tokens + max_tokens past the context get 400 (code context_length_exceeded); a
// `model` naming another model gets 404 (code model_not_found); every request has a deadline
// (504); malformed JSON and wrong field types get 400 naming the field. Errors are OpenAI
// error objects. Streaming requests answer with an HTTP error status when they fail before
// their first token, and with an error event (then [DONE]) when they fail later.
//
// Against hostile or broken clients (connection_server.h has the connection side):
//   - bodies: a body over max_body_bytes gets 413 as soon as that is known: from its
//     Content-Length before any of it is read, or while reading a chunked (or compressed) body,
//     so it is never buffered whole; a body with no length gets 411, an unknown
//     Transfer-Encoding 501, a body on a route that takes none 404 or 400, all without reading
//     it, and the connection is closed after the reply;
//   - slow clients: the request head must arrive within header_timeout (408), the body within
//     body_timeout; a client that takes no bytes for write_timeout is dropped; waiting for a
//     head costs no worker thread, and at most max_connections are open (oldest idle dropped);
//   - load: max_concurrent generations run at once, max_queued more wait in line (first come,
//     first served) up to queue_timeout; a request that finds the line full or waits too long
//     gets 429 with Retry-After. Time in the line is smartgen_server_queue_seconds, the line's
//     length smartgen_server_requests_queued;
//   - a client that disconnects is noticed within about client_poll even while nothing is
//     written to it (queued, before its first token, between tokens, non-streaming): its
//     generation is cancelled and the backend told at once (GenerationRequest::cancel);
//   - a request cancelled by anyone but its client is never answered as a 200 completion.
// With tls_cert_file and tls_key_file the API is served over TLS only (TLS 1.2+).
//
// Thread-safety: Start() and Stop() from one owning thread; requests are served on an
// internal pool of `threads` threads (a request holds one while it is read, queued or
// generated; a streaming request until it ends; an idle connection holds none).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "server/completion_backend.h"

namespace smartgen::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // "0.0.0.0" to listen on every interface
  int port = 0;                    // 0: an ephemeral port (see HttpServer::port())
  std::string api_key;             // "" = no authentication
  std::size_t max_body_bytes = std::size_t{4} << 20;
  int max_concurrent = 64;                           // generations at once; more wait in line
  int max_queued = 128;                              // waiting for a slot; more get 429
  core::Nanos queue_timeout = core::Seconds(30);     // longest wait in line (then 429)
  int retry_after_s = 1;                             // Retry-After of a 429
  core::Nanos request_timeout = core::Seconds(600);  // per request, arrival to last token
  int threads = 0;               // HTTP worker threads; 0 = max_concurrent + max_queued + 8
  int keep_alive_timeout_s = 5;  // idle keep-alive connections are closed after this
  core::Nanos header_timeout = core::Seconds(10);  // request line + headers must arrive by then
  core::Nanos body_timeout = core::Seconds(30);    // the body must arrive by then (after head)
  core::Nanos write_timeout = core::Seconds(10);   // a client taking no bytes this long is gone
  int max_connections = 1024;                      // open client connections
  std::size_t max_header_bytes = std::size_t{64} << 10;  // request line + headers
  core::Nanos client_poll = core::Millis(250);  // how often a waiting request checks its client
  std::string tls_cert_file;      // PEM certificate chain; with tls_key_file: serve HTTPS only
  std::string tls_key_file;       // PEM private key
  int default_max_tokens = 16;    // /v1/completions without max_tokens (OpenAI's default);
                                  // chat defaults to the rest of the context
  // The names the model is served under (--served-model-name): the first is the one responses
  // carry unless the request named another of them; a request naming none of them gets 404.
  // Empty: the backend's model_name().
  std::vector<std::string> served_model_names;
  // --chat-template: a template name (tokenizer/chat_template.h) or template text for every
  // chat request; "" = the model's own. Start() refuses one it cannot use.
  std::string chat_template;
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
