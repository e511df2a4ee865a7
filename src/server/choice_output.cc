#include "server/choice_output.h"

namespace smartgen::server {

ChoiceOutput::ChoiceOutput(const tokenizer::Tokenizer& tok, const ChoiceLimits& limits)
    : tok_(tok),
      max_tokens_(limits.max_tokens),
      ignore_eos_(limits.ignore_eos),
      echo_(limits.echo),
      text_(limits.stop),
      text_offset_(static_cast<std::int64_t>(limits.echo.size())) {}

bool ChoiceOutput::Consume(const GeneratedToken& token) {
  if (complete_) return false;
  ++completion_tokens_;
  tokens_.push_back(token.id);
  if (token.logprobs) logprobs_.push_back({token.id, *token.logprobs});
  if (!ignore_eos_ && tok_.IsEog(token.id)) {
    eog_ = true;
    complete_ = true;
  } else if (text_.Append(tok_.TokenToPiece(token.id, /*special=*/false))) {
    stop_hit_ = true;
    complete_ = true;
  }
  if (completion_tokens_ >= max_tokens_) complete_ = true;
  return true;
}

std::string ChoiceOutput::FinishReason(const std::string& backend_reason) const {
  if (stop_hit_ || eog_) return "stop";
  if (completion_tokens_ >= max_tokens_) return "length";
  return backend_reason.empty() ? "length" : backend_reason;
}

std::string ChoiceOutput::TakeDelta() {
  std::string out = echo_sent_ ? std::string() : echo_;
  echo_sent_ = true;
  return out + text_.TakeDelta();
}

std::string ChoiceOutput::TakeRest() {
  std::string out = echo_sent_ ? std::string() : echo_;
  echo_sent_ = true;
  return out + text_.TakeRest();
}

std::vector<LogprobEntry> ChoiceOutput::TakeLogprobs() {
  std::vector<LogprobEntry> out(logprobs_.begin() + static_cast<std::ptrdiff_t>(logprobs_taken_),
                                logprobs_.end());
  logprobs_taken_ = logprobs_.size();
  return out;
}

}  // namespace smartgen::server
