// CompletionBackend: what the HTTP server (http_server.h) serves. The router of the
// disaggregated deployment implements it, and so does a single-process engine
// (model_backend.h). The server owns everything OpenAI-specific (JSON, chat templates,
// tokenization, stop sequences, SSE, usage, limits); a backend only turns prompt token ids into
// generated token ids.
//
// Contract of Generate():
//   - Blocking: it returns when generation ended (max_tokens reached, an end-of-generation
//     token, cancellation, failure or the deadline).
//   - on_token(id) is called once per generated token, in order, as soon as the token exists,
//     from any thread (never concurrently for one request). It is cheap: the server queues the
//     token and returns; it never blocks on the client. Returning false cancels the request:
//     the backend stops calling on_token, frees what the request holds, and returns soon
//     (within one decode step) with finish_reason "cancelled" or a kCancelled status.
//   - An end-of-generation token (Tokenizer::IsEog) is passed to on_token and then ends the
//     request with finish_reason "stop". Reaching max_tokens ends it with "length".
//   - request.cancel (when set) is signalled the moment the server cancels the request (client
//     gone, stop sequence, deadline, shutdown), even when no token is due: a backend that waits
//     on anything else (a queue, a prefill, another node) polls it or subscribes to it and then
//     returns soon, as if on_token had returned false. "cancelled" is a finish_reason only for
//     such a server-side cancel: the server reports a "cancelled" result it did not ask for as
//     an error, never as a complete answer.
//   - It honours request.deadline: past it, it stops and returns kDeadlineExceeded.
//   - Errors are Status codes the server maps to HTTP: kInvalidArgument / kOutOfRange /
//     kUnimplemented -> 400, kResourceExhausted -> 429, kUnavailable -> 503,
//     kDeadlineExceeded -> 504, others -> 500. An error after some tokens were streamed ends
//     the stream with an error event.
//
// Thread-safety: every method may be called concurrently from many threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "model/sampler.h"
#include "server/cancel_signal.h"
#include "tokenizer/tokenizer.h"

namespace smartgen::server {

// Transfer modes a request may ask for in its `smartgen` extension (DESIGN.md section 5).
inline constexpr const char* kTransferModes[] = {"colocated", "full", "layerwise", "smartgen",
                                                 "auto"};

struct GenerationRequest {
  std::string request_id;            // unique per server ("cmpl-..." / "chatcmpl-...")
  std::vector<std::int32_t> prompt;  // token ids: templated and tokenized by the server
  int max_tokens = 16;               // >= 1; prompt.size() + max_tokens <= context_length()
  model::SamplingParams sampling;    // temperature, top_k, top_p, seed
  std::string transfer_mode;         // "" = the backend's default, else one of kTransferModes
  nlohmann::json extension;          // the request's raw `smartgen` object (null if absent)
  core::Deadline deadline = core::Deadline::Never();  // on core::SteadyClock()
  // Signalled when the server cancels the request (see the contract below); null if nobody
  // will. Shared: it lives as long as its longest holder.
  std::shared_ptr<CancelSignal> cancel;
};

struct GenerationResult {
  std::string finish_reason;  // "length", "stop" (end-of-generation token) or "cancelled"
  // Per-request figures from the backend (e.g. ttft_ms, ttst_ms, bytes_transferred, mode),
  // returned to the client in the `smartgen` object of the response. An object or null.
  nlohmann::json stats;
};

// Called with each generated token; returning false cancels the generation.
using TokenSink = std::function<bool(std::int32_t token)>;

class CompletionBackend {
 public:
  virtual ~CompletionBackend() = default;

  // The model's tokenizer; lives as long as the backend.
  virtual const tokenizer::Tokenizer& tokenizer() const = 0;
  // The name served in /v1/models and in responses.
  virtual std::string model_name() const = 0;
  // Most positions one request may use: prompt tokens + max_tokens.
  virtual std::int64_t context_length() const = 0;

  // Generates for `request`, calling on_token for each token (see the contract above).
  virtual Result<GenerationResult> Generate(const GenerationRequest& request,
                                            const TokenSink& on_token) = 0;

  // OK when the backend can take requests; else why not (GET /health answers 503).
  virtual Status Health() const { return Status::Ok(); }
  // Detail for GET /health's body (e.g. per pool: {"status": "degraded", "decode": {...}}); null
  // = none.
  virtual nlohmann::json HealthDetail() const { return nullptr; }
  // Appends the backend's own metrics in Prometheus text format (core/metrics.h helps).
  virtual void AppendMetrics(std::string* out) const {}
};

}  // namespace smartgen::server
