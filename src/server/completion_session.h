// CompletionSession: one admitted completion request, from the backend's tokens to the bytes
// the client receives. It knows nothing of HTTP sockets: the caller gives it a write function.
//
// Start() runs CompletionBackend::Generate on a thread of its own. Tokens arrive through a
// queue, so the backend never waits for a slow client; the caller's thread consumes them:
// each choice's ChoiceOutput decodes its text (stop sequences, whole UTF-8 characters) and keeps
// its log-probabilities, the session measures TTFT / TTST / TBT (of choice 0) as it emits them,
// and either collects one JSON response (Collect) or writes SSE events as they come (Stream).
//
// n > 1 choices: a backend with features().choices generates them itself (sharing the
// prompt's KV); for any other backend the session runs n requests of one choice each, on n
// threads, choice i with seed sampling.seed + i, and merges their tokens.
//
//   session.Start();
//   Status first = session.AwaitFirstToken();   // not OK: answer with an HTTP error
//   stream ? session.Stream(write) : session.Collect();
//
// Cancellation: a stop sequence, a failed write or the client_gone probe (client gone), the
// deadline, and Cancel() (server shutdown) all signal request.cancel at once and make the
// backend's next on_token return false; the session then waits for Generate to return, as the
// backend contract promises it will soon. While it waits for tokens (before the first one, in
// Collect and in Stream) it asks client_gone every client_poll, so a client that leaves is
// noticed within about that long even when nothing is written to it. A backend that ends with
// finish_reason "cancelled" that the session did not ask for is a failure (kUnavailable), not a
// complete answer.
//
// Thread-safety: Cancel() may be called from any thread; the other methods from one thread.
// The destructor cancels and joins the generation thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "server/completion_backend.h"
#include "server/openai_response.h"
#include "server/server_metrics.h"
#include "server/choice_output.h"

namespace smartgen::server {

struct SessionSetup {
  ResponseHeader header;
  std::int64_t prompt_tokens = 0;
  std::vector<std::string> stop;
  std::string echo;  // completions' echo: the prompt's text before each choice's ("" = none)
  bool include_usage = false;
  bool return_token_ids = false;
  core::Nanos arrival = 0;  // steady-clock time the request arrived (TTFT, e2e)
  // A stream with nothing to send for this long gets an SSE comment, which also finds out
  // whether the client is still there.
  core::Nanos keepalive_interval = core::Seconds(10);
  // True once the client has gone (polled from the consuming thread); empty: never asked.
  std::function<bool()> client_gone;
  core::Nanos client_poll = core::Millis(250);
};

// Writes bytes to the client; false when the client is gone.
using ByteWriter = std::function<bool(std::string_view bytes)>;

class CompletionSession {
 public:
  // `backend` and `metrics` outlive the session. request.deadline bounds every wait.
  CompletionSession(CompletionBackend* backend, GenerationRequest request, SessionSetup setup,
                    ServerMetrics* metrics);
  ~CompletionSession();
  CompletionSession(const CompletionSession&) = delete;
  CompletionSession& operator=(const CompletionSession&) = delete;

  void Start();

  // Blocks until the first token exists or generation ended. An error when it ended without a
  // token: the backend's failure, kDeadlineExceeded, or the Cancel() reason.
  Status AwaitFirstToken();

  // Non-streaming: waits for the end; the response body, or the error that ended the request.
  Result<nlohmann::json> Collect();

  // Streaming: writes the SSE events (chunks, usage, [DONE]; an error event if generation
  // failed midway) until the end or until `write` fails. Returns the outcome as an HTTP status
  // for metrics: 200, 499 (client gone) or the error's status; `on_end` (optional) gets it
  // once generation is over and before the final [DONE] is written.
  int Stream(const ByteWriter& write, const std::function<void(int outcome)>& on_end = nullptr);

  // Cancels the generation with `reason` (e.g. kUnavailable at shutdown). Thread-safe.
  void Cancel(Status reason);

 private:
  enum class Wake { kTokens, kDone, kDeadline, kIdle };
  // A token as queued: its log-probabilities copied (the backend's pointer is call-scoped).
  struct Queued {
    std::int32_t id = 0;
    int choice = 0;
    std::optional<model::TokenLogprobs> logprobs;
  };

  bool OnToken(const GeneratedToken& token);  // backend threads
  // The generation thread's body: one Generate, or n of one choice each (see above).
  void RunGeneration();
  Wake WaitForTokens(std::vector<Queued>* batch, core::Nanos idle);
  // Asks setup_.client_gone; cancels the request when the client has gone. True if gone.
  bool CheckClient();
  // Takes one token into its choice; false when that choice had ended (stop, EOG, max_tokens).
  bool Consume(const Queued& token);
  // After generation ended: the request's status (OK when the output is complete).
  Status FinalStatus();
  std::string FinishReason(int choice) const;
  nlohmann::json ChoiceLogprobs(int choice, bool take);
  nlohmann::json SmartgenStats() const;
  // A complete answer was sent: its length and each choice's finish reason in the metrics.
  void RecordSuccess();
  Usage usage() const;

  CompletionBackend* backend_;
  const GenerationRequest request_;
  const SessionSetup setup_;
  ServerMetrics* metrics_;
  const tokenizer::Tokenizer& tokenizer_;
  const bool backend_choices_;  // backend_->features().choices
  std::thread thread_;

  std::atomic<bool> cancelled_{false};
  // Per choice: set by the consumer once the choice is complete; the backend is then told
  // (on_token returns false for it).
  std::unique_ptr<std::atomic<bool>[]> choice_ended_;
  bool client_gone_ = false;  // consumer thread
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Queued> queue_;                        // guarded by mu_
  bool done_ = false;                               // guarded by mu_
  // One result, or one per choice when the session ran n requests; guarded by mu_, set with
  // done_.
  std::vector<Result<GenerationResult>> results_;
  Status cancel_reason_;                            // guarded by mu_; first reason wins

  // Consumer state (the caller's thread).
  std::vector<ChoiceOutput> choices_;
  int choices_complete_ = 0;
  bool complete_ = false;  // every choice complete: the output is final
  core::Nanos first_token_at_ = 0;
  core::Nanos last_token_at_ = 0;
  double ttst_ms_ = -1;
  double tbt_sum_ms_ = 0;
  static constexpr std::size_t kMaxTokenTimes = 4096;
  std::vector<double> token_ms_;  // when each token (the first kMaxTokenTimes) was consumed
  std::int64_t tbt_count_ = 0;
};

}  // namespace smartgen::server
