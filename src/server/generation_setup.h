// PrepareGeneration: from a validated OpenAI request (openai_request.h) to what the backend is
// asked (GenerationRequest): the prompt's token ids (chat template applied), max_tokens checked
// against the context, the sampling parameters, n, ignore_eos, and completions' echo text.
//
// Every field asking for something the backend does not honour (CompletionBackend::features)
// is refused with a 400 naming it; nothing is dropped silently. Token ids (prompt, logit_bias)
// must be in the vocabulary.
//
// Pure function of its inputs: thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/api_error.h"
#include "server/completion_backend.h"
#include "server/openai_request.h"

namespace smartgen::server {

struct PreparedGeneration {
  GenerationRequest request;  // request_id, deadline and cancel are left to the caller
  std::string echo;           // the prompt's text when `echo`, else ""
};

// `default_max_tokens`: completions without max_tokens (chat takes the rest of the context);
// `drawn_seed`: the seed when the request has none; `chat_template`: the server's override
// ("" = the model's).
std::optional<ApiError> PrepareGeneration(const CompletionRequest& r,
                                          const CompletionBackend& backend, int default_max_tokens,
                                          std::uint64_t drawn_seed, std::string_view chat_template,
                                          PreparedGeneration* out);

}  // namespace smartgen::server
