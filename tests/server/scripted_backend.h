// ScriptedBackend: a CompletionBackend for server tests. Deterministic tokens, controllable
// delays, a gate to hold requests, and injected failures; it records what it was asked and
// how each request ended. Its tokenizer is the synthetic byte vocabulary (token id == byte
// value for ids < 256, 258 = <|im_end|> = EOS), so scripted text maps to tokens byte by byte.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/clock.h"
#include "server/completion_backend.h"

namespace smartgen::server::testing {

inline constexpr std::int32_t kEos = 258;  // <|im_end|>: end of generation

struct Script {
  // Tokens to generate, cut at max_tokens; when they run out the request ends with "stop"
  // (put kEos last to end the way a model does). Empty: an endless per-request sequence (see
  // ExpectedDefaultText) that ends with "length".
  std::vector<std::int32_t> tokens;
  core::Nanos first_token_delay = 0;
  core::Nanos token_delay = 0;
  Status fail_before_first;    // not OK: Generate returns it before any token
  int fail_after_tokens = -1;  // >= 0: after that many tokens, return fail_status
  Status fail_status = Unavailable("scripted failure");
  // >= 0: after that many tokens, end with finish_reason "cancelled" although nobody asked
  // (as a node cancelled by someone else would).
  int cancelled_after_tokens = -1;
  nlohmann::json stats = nlohmann::json::object();
};

// Bytes of `text` as token ids of the byte vocabulary.
std::vector<std::int32_t> TokensOf(std::string_view text);

// The text the default script generates for `prompt`: letters a..z starting at an offset
// given by the prompt, so concurrent requests get different, predictable outputs.
std::string ExpectedDefaultText(const std::vector<std::int32_t>& prompt, int n_tokens);

// The synthetic byte tokenizer (written to a temp GGUF once per process).
std::unique_ptr<tokenizer::Tokenizer> MakeByteTokenizer();

class ScriptedBackend final : public CompletionBackend {
 public:
  explicit ScriptedBackend(std::int64_t context_length = 4096);

  void SetScript(Script script);
  // While closed, Generate waits (before its first token) until opened, the request's cancel
  // signal, or the deadline.
  void CloseGate();
  void OpenGate();
  void SetHealth(Status health);
  // What features() reports (default: none). With logprobs, token i of a request gets
  // logprob -(i + 1) / 4 and top entries (token + k, logprob - k), k < sampling.logprobs.
  void SetFeatures(BackendFeatures features);

  const tokenizer::Tokenizer& tokenizer() const override { return *tokenizer_; }
  std::string model_name() const override { return "scripted"; }
  std::int64_t context_length() const override { return context_length_; }
  BackendFeatures features() const override;
  Result<GenerationResult> Generate(const GenerationRequest& request,
                                    const TokenSink& on_token) override;
  Status Health() const override;
  void AppendMetrics(std::string* out) const override;

  // Observations.
  int calls() const { return calls_.load(); }
  int cancellations() const { return cancellations_.load(); }  // on_token returned false
  // Requests whose cancel signal (GenerationRequest::cancel) fired while they ran.
  int cancel_signals() const { return cancel_signals_.load(); }
  int in_flight() const { return in_flight_.load(); }
  int max_in_flight() const { return max_in_flight_.load(); }
  GenerationRequest last_request() const;

 private:
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  const std::int64_t context_length_;
  mutable std::mutex mu_;
  std::condition_variable gate_cv_;
  bool gate_open_ = true;
  Script script_;
  Status health_;
  BackendFeatures features_;
  GenerationRequest last_request_;
  std::atomic<int> calls_{0}, cancellations_{0}, in_flight_{0}, max_in_flight_{0};
  std::atomic<int> cancel_signals_{0};
};

}  // namespace smartgen::server::testing
