// Building OpenAI response bodies: completions and chat completions, their streaming chunks,
// the usage object and the model list, in OpenAI's exact shapes:
//
//   text_completion        {id, object, created, model, choices: [{text, index, logprobs,
//                           finish_reason}], usage}
//   chat.completion        {id, object, created, model, choices: [{index, message: {role,
//                           content}, logprobs, finish_reason}], usage}
//   chunks                 the same with `text` / `delta` ({role} first, then {content}, {} at
//                           the end) and finish_reason null until the last choice chunk;
//                           "usage": null on every chunk when include_usage, then one final
//                           chunk with "choices": [] and the usage.
//
// smartgen's per-request figures travel in a top-level `smartgen` object (omitted when null).
// Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "server/openai_request.h"

namespace smartgen::server {

// What every response and chunk of one request shares.
struct ResponseHeader {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string id;            // "cmpl-..." / "chatcmpl-..."
  std::int64_t created = 0;  // Unix seconds
  std::string model;
};

struct Usage {
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
};

nlohmann::json UsageJson(const Usage& usage);

// One choice of a non-streaming response; `logprobs` null when not asked (openai_logprobs.h).
struct ChoiceBody {
  std::string text;
  std::string finish_reason;
  nlohmann::json logprobs;
};

// The non-streaming response: choices[i] gets index i.
nlohmann::json CompletionResponse(const ResponseHeader& header,
                                  const std::vector<ChoiceBody>& choices, const Usage& usage,
                                  const nlohmann::json& smartgen);
// The same with one choice.
nlohmann::json CompletionResponse(const ResponseHeader& header, std::string_view text,
                                  std::string_view finish_reason, const Usage& usage,
                                  const nlohmann::json& smartgen);

// A streaming chunk with one choice (`index`). `text` is the delta; `role_chunk` (chat only)
// makes the delta {"role": "assistant", "content": ""}; a non-empty finish_reason ends the
// choice (chat delta {}). `with_null_usage` adds "usage": null (streams with include_usage).
// `logprobs`: the delta's tokens' object, or null.
nlohmann::json ChoiceChunk(const ResponseHeader& header, std::string_view text,
                           std::string_view finish_reason, bool role_chunk, bool with_null_usage,
                           int index = 0, const nlohmann::json& logprobs = nullptr);

// The last chunk of a stream with include_usage: "choices": [] and the usage.
nlohmann::json UsageChunk(const ResponseHeader& header, const Usage& usage);

// GET /v1/models/{id}: one model object.
nlohmann::json ModelCard(std::string_view model, std::int64_t created,
                         std::int64_t context_length);
// GET /v1/models: every name the model is served under.
nlohmann::json ModelList(const std::vector<std::string>& models, std::int64_t created,
                         std::int64_t context_length);
nlohmann::json ModelList(std::string_view model, std::int64_t created, std::int64_t context_length);

// JSON text on one line. Invalid UTF-8 (possible in generated text) becomes U+FFFD instead of
// throwing.
std::string DumpJson(const nlohmann::json& value);

}  // namespace smartgen::server
