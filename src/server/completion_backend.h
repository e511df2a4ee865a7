// CompletionBackend: what the HTTP server (http_server.h) serves. The router of the
// disaggregated deployment implements it, and so does a single-process engine
// (model_backend.h). The server owns everything OpenAI-specific (JSON, chat templates,
// tokenization, stop sequences, SSE, usage, limits); a backend only turns prompt token ids into
// generated token ids.
//
// Contract of Generate():
//   - Blocking: it returns when generation ended (max_tokens reached, an end-of-generation
//     token, cancellation, failure or the deadline).
//   - on_token(token) is called once per generated token, in order within each choice, as
//     soon as the token exists, from any thread (never concurrently for one request). It is
//     cheap: the server queues the token and returns; it never blocks on the client. Returning
//     false ends that choice; once every choice has ended (n = 1: at once) the backend stops
//     calling on_token, frees what the request holds, and returns soon (within one decode
//     step) with finish_reason "cancelled" or a kCancelled status.
//   - An end-of-generation token (Tokenizer::IsEog) is passed to on_token and then ends its
//     choice with finish_reason "stop" (unless ignore_eos). Reaching max_tokens ends it with
//     "length".
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

// Most choices (OpenAI's `n`) one request may ask for.
inline constexpr int kMaxChoices = 16;

struct GenerationRequest {
  std::string request_id;            // unique per server ("cmpl-..." / "chatcmpl-...")
  std::vector<std::int32_t> prompt;  // token ids: templated and tokenized by the server
  int max_tokens = 16;               // >= 1 per choice; prompt.size() + max_tokens <= context
  model::SamplingParams sampling;    // see model/sampler.h; only what features() honours is set
  // Choices to generate from the one prompt (OpenAI's `n`). Only > 1 for a backend whose
  // features().choices is true; choice i samples with seed sampling.seed + i.
  int n = 1;
  bool ignore_eos = false;           // an end-of-generation token does not end a choice
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

// One generated token as the backend hands it over.
struct GeneratedToken {
  // Implicit: a backend of one choice without log-probabilities passes just the id.
  GeneratedToken(std::int32_t token) : id(token) {}  // NOLINT(google-explicit-constructor)
  GeneratedToken(std::int32_t token, int choice_index, const model::TokenLogprobs* lp)
      : id(token), choice(choice_index), logprobs(lp) {}

  std::int32_t id;
  int choice = 0;                                  // [0, request.n)
  const model::TokenLogprobs* logprobs = nullptr;  // valid during the call; null if not asked
};

// Called with each generated token. Returning false ends that token's choice (with n = 1:
// cancels the generation); the request ends when every choice has ended.
using TokenSink = std::function<bool(const GeneratedToken& token)>;

// What a backend honours beyond the basics (temperature, top_k, top_p, seed, max_tokens). The
// server refuses (400, naming the field) a request field whose feature is false, never
// ignoring it: capability flags that are read and acted on.
struct BackendFeatures {
  bool logprobs = false;       // fills GeneratedToken::logprobs when sampling.logprobs >= 0
  bool logit_processing = false;  // min_p, presence/frequency/repetition penalties, logit_bias
  bool ignore_eos = false;     // honours GenerationRequest::ignore_eos
  // Generates request.n choices itself, sharing the prompt's KV. When false the server runs
  // n requests of one choice each (seeds seed + i) and merges them.
  bool choices = false;
};

class CompletionBackend {
 public:
  virtual ~CompletionBackend() = default;

  // The model's tokenizer; lives as long as the backend.
  virtual const tokenizer::Tokenizer& tokenizer() const = 0;
  // The name served in /v1/models and in responses.
  virtual std::string model_name() const = 0;
  // Most positions one request may use: prompt tokens + max_tokens.
  virtual std::int64_t context_length() const = 0;
  // What it honours (above).
  virtual BackendFeatures features() const { return {}; }

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
