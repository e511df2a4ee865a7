// ChoiceOutput: one choice of a completion as the client sees it. Takes the backend's tokens in
// order and turns them into text (TextStream: stop sequences, whole UTF-8 characters), keeps
// their log-probabilities, and knows when and why the choice ended (a stop sequence, an
// end-of-generation token unless ignore_eos, max_tokens).
//
// With an echo prefix (completions' `echo`), the prompt's text comes before the generated
// text: in text() and in the first delta.
//
// Not thread-safe: one request's consuming thread owns it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/completion_backend.h"
#include "server/openai_logprobs.h"
#include "server/text_stream.h"

namespace smartgen::server {

struct ChoiceLimits {
  std::vector<std::string> stop;
  int max_tokens = 16;
  bool ignore_eos = false;
  std::string echo;  // text before the completion ("" = none)
};

class ChoiceOutput {
 public:
  // `tok` outlives this object.
  ChoiceOutput(const tokenizer::Tokenizer& tok, const ChoiceLimits& limits);

  // Takes one token; false when the choice had ended already (the token is dropped).
  bool Consume(const GeneratedToken& token);
  bool complete() const { return complete_; }
  std::int64_t completion_tokens() const { return completion_tokens_; }
  const std::vector<std::int32_t>& tokens() const { return tokens_; }

  // The finish reason: "stop" (stop sequence or end-of-generation token), "length" (max
  // tokens), else `backend_reason` when not empty, else "length".
  std::string FinishReason(const std::string& backend_reason) const;

  // Text: the whole so far, and the parts to stream (see TextStream).
  std::string text() const { return echo_ + text_.text(); }
  std::string TakeDelta();
  std::string TakeRest();

  // Log-probabilities: all of them, and those not yet taken for a stream chunk.
  const std::vector<LogprobEntry>& logprobs() const { return logprobs_; }
  std::vector<LogprobEntry> TakeLogprobs();
  std::size_t untaken_logprobs() const { return logprobs_.size() - logprobs_taken_; }
  // Completions' text_offset of the next entry taken (advanced by the JSON builder).
  std::int64_t* text_offset() { return &text_offset_; }

 private:
  const tokenizer::Tokenizer& tok_;
  const int max_tokens_;
  const bool ignore_eos_;
  const std::string echo_;
  bool echo_sent_ = false;
  TextStream text_;
  std::vector<std::int32_t> tokens_;
  std::vector<LogprobEntry> logprobs_;
  std::size_t logprobs_taken_ = 0;
  std::int64_t text_offset_;
  std::int64_t completion_tokens_ = 0;
  bool complete_ = false;
  bool stop_hit_ = false;
  bool eog_ = false;
};

}  // namespace smartgen::server
