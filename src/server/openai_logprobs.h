// The `logprobs` objects of OpenAI responses, from per-token log-probabilities (natural log):
//
//   completions  {"tokens": [piece], "token_logprobs": [lp], "top_logprobs": [{piece: lp}],
//                 "text_offset": [byte offset of each token in the choice's text]}
//                 top_logprobs holds the `top` most likely tokens and the chosen one (so up to
//                 top + 1 entries, as vLLM and OpenAI do).
//   chat         {"content": [{"token": piece, "logprob": lp, "bytes": [utf-8 bytes],
//                 "top_logprobs": [{"token", "logprob", "bytes"}, ...]}]}
//
// A streaming chunk carries the same object for the tokens of its delta. Pieces are the
// tokens' text as the tokenizer writes them (special tokens by name); a piece that is not valid
// UTF-8 (part of a character) is written "bytes:\xNN..." as OpenAI does, so distinct pieces stay
// distinct keys. Pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>

#include "model/sampler.h"
#include "tokenizer/tokenizer.h"

namespace smartgen::server {

// One generated token and its log-probabilities.
struct LogprobEntry {
  std::int32_t token = 0;
  model::TokenLogprobs logprobs;
};

// Completions' object; `*text_offset` is the byte offset of the first entry in the choice's text
// and is advanced past the entries (the text the client sees: pieces without special tokens).
nlohmann::json CompletionLogprobsJson(const tokenizer::Tokenizer& tok,
                                      std::span<const LogprobEntry> entries,
                                      std::int64_t* text_offset);

// Chat's object.
nlohmann::json ChatLogprobsJson(const tokenizer::Tokenizer& tok,
                                std::span<const LogprobEntry> entries);

}  // namespace smartgen::server
