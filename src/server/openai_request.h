// Parsing and validating OpenAI `POST /v1/completions` and `POST /v1/chat/completions` bodies.
//
// Every field the server knows is type-checked (a wrong type is kInvalidArgument naming the
// field); `null` counts as absent for optional fields; unknown fields are ignored, as OpenAI
// clients send extras. Known fields asking for what this server cannot do (n > 1, best_of > 1,
// echo, logprobs, suffix, non-zero penalties, logit_bias, tools, a non-text response_format)
// are rejected rather than silently ignored.
//
// Fields: model, prompt (string | [token ids] | [string] | [[token ids]]; completions only),
// messages (chat only: [{role, content: string | [{type: "text", text}]}]), max_tokens,
// max_completion_tokens (chat; wins over max_tokens), temperature (0..2, default 1), top_p
// ((0, 1], default 1), top_k (extension; >= -1, -1 and 0 = off), seed, stop (string or up to 16
// strings), n (1 only), stream, stream_options.include_usage, and the `smartgen` extension
// object: {"mode": "colocated|full|layerwise|smartgen|auto", "return_token_ids": bool, ...};
// the whole extension object is passed to the backend.
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
#include "tokenizer/chat_template.h"

namespace smartgen::server {

enum class Endpoint { kCompletions, kChatCompletions };

// "completions" or "chat_completions" (metric labels, logs).
std::string_view EndpointName(Endpoint endpoint);

inline constexpr int kMaxStopSequences = 16;
inline constexpr std::size_t kMaxStopBytes = 256;

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
  model::SamplingParams sampling;  // temperature defaults to 1 (OpenAI)
  bool seed_given = false;         // else the server draws a seed
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
