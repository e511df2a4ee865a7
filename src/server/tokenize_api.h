// POST /tokenize and POST /detokenize in vLLM's shapes:
//
//   /tokenize    {"prompt": "text", "add_special_tokens": true}
//             or {"messages": [...], "add_generation_prompt": true, "add_special_tokens": false}
//                -> {"count": n, "max_model_len": ctx, "tokens": [ids], "token_strs": null}
//                   ("token_strs": [pieces] with "return_token_strs": true)
//   /detokenize  {"tokens": [ids]} -> {"prompt": "text"}
//
// Both take an optional "model" (returned in *model for the caller's 404 check). Malformed
// input is kInvalidArgument with *error_param naming the field; token ids outside the
// vocabulary too. Never throws. Thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/result.h"
#include "tokenizer/tokenizer.h"

namespace smartgen::server {

// `chat_template`: the server's --chat-template override ("" = the model's).
Result<nlohmann::json> TokenizeRequest(std::string_view body, const tokenizer::Tokenizer& tok,
                                       std::int64_t max_model_len, std::string_view chat_template,
                                       std::string* model, std::string* error_param);

Result<nlohmann::json> DetokenizeRequest(std::string_view body, const tokenizer::Tokenizer& tok,
                                         std::string* model, std::string* error_param);

}  // namespace smartgen::server
