// Parsing and validating OpenAI `POST /v1/completions` and `POST /v1/chat/completions` bodies.
//
// Every field the server knows is type-checked (a wrong type is kInvalidArgument naming the
// field); `null` counts as absent for optional fields; unknown fields are ignored, as OpenAI
// clients send extras. Known fields asking for what this server cannot do (best_of other than
// 1 or n, suffix, tools, a non-text response_format, prompt logprobs, beam search, guided
// decoding, min_tokens, stop_token_ids, bad_words, allowed_token_ids, truncate_prompt_tokens,
// include_stop_str_in_output true, skip_special_tokens false) are rejected rather than silently
// ignored.
//
// Fields: model, prompt (string | [token ids] | [string] | [[token ids]]; completions only),
// messages (chat only: [{role, content: string | [{type: "text", text}]}]), max_tokens,
// max_completion_tokens (chat; wins over max_tokens), temperature (0..2, default 1), top_p
// ((0, 1], default 1), top_k (extension; >= -1, -1 and 0 = off), min_p ([0, 1]), seed, stop
// (string or up to 16 strings), n (1..kMaxChoices), presence_penalty and frequency_penalty
// ([-2, 2]), repetition_penalty ((0, 10], 1 = off), logit_bias ({"token id": bias in
// [-100, 100]}, up to kMaxLogitBias entries), logprobs (completions: an integer
// 0..model::kMaxTopLogprobs, the top tokens per position; chat: a boolean, with top_logprobs
// 0..model::kMaxTopLogprobs), echo (completions: the prompt's text before the completion; not
// with logprobs, which would need the prompt's), ignore_eos (vLLM's), stream,
// stream_options.include_usage, and the `smartgen` extension object: {"mode":
// "colocated|full|layerwise|smartgen|auto", "return_token_ids": bool, ...}; the whole extension
// object is passed to the backend. Token ids (logit_bias, prompt) are checked against the
// vocabulary by the server, which knows it.
//
// Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "model/sampler.h"
#include "server/completion_backend.h"
#include "tokenizer/chat_template.h"

namespace smartgen::server {

enum class Endpoint { kCompletions, kChatCompletions };

// "completions" or "chat_completions" (metric labels, logs).
std::string_view EndpointName(Endpoint endpoint);

inline constexpr int kMaxStopSequences = 16;
inline constexpr std::size_t kMaxStopBytes = 256;
inline constexpr std::size_t kMaxLogitBias = 1024;

struct CompletionRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;  // "" when absent

  // Completions: the prompt as text, or as token ids when prompt_is_tokens.
  std::string prompt_text;
  std::vector<std::int32_t> prompt_tokens;
  bool prompt_is_tokens = false;
  // Chat: the conversation (roles "system", "user", "assistant", "tool"; "developer" is
  // mapped to "system").
  std::vector<tokenizer::ChatMessage> messages;

  std::optional<int> max_tokens;   // absent: the server's default
  model::SamplingParams sampling;  // temperature defaults to 1 (OpenAI); logprobs -1 = none
  bool seed_given = false;         // else the server draws a seed
  int n = 1;                       // choices
  bool echo = false;               // completions: prepend the prompt's text
  bool ignore_eos = false;
  std::vector<std::string> stop;   // non-empty strings
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage

  // The `smartgen` extension.
  std::string transfer_mode;      // "" or one of kTransferModes
  bool return_token_ids = false;  // add the generated ids to the response's `smartgen`
  nlohmann::json extension;       // raw object, or null
};

// Parses `body` (JSON text) for `endpoint`. Malformed JSON, a non-object body, a missing
// required field, a wrong type or value, and unsupported features are kInvalidArgument; then
// `*error_param` (if given) names the field at fault ("" when none).
Result<CompletionRequest> ParseCompletionRequest(std::string_view body, Endpoint endpoint,
                                                 std::string* error_param = nullptr);

}  // namespace smartgen::server
