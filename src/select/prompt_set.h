// Prompts for calibration (`smartgen profile`) and evaluation (`smartgen eval select`).
//
// Prompts file: UTF-8, one prompt per line; blank lines and lines starting with '#' are
// skipped. A line starting with '{' is a JSON object with "text" (tokenized with the model's
// tokenizer, BOS as the vocabulary says) or "tokens" (ids, used as they are), and optionally
// "answer" (the expected next token id, retrieval tasks), "needle_pos" (the prompt position
// the answer depends on) and "label". Any other line is prompt text. PromptsToJsonl writes the
// token form, so a generated set can be saved and reused exactly.
//
// Generated prompts, so no data is downloaded:
//   ExtendPrompts       - grows each prompt (e.g. a story opening) with the model's own sampled
//                         continuation to a seeded target length: natural text for real models.
//   MakeKvRetrievalPrompts - the task of ../shared/models/kv-retrieval-tiny.gguf (README there):
//                         <s>, fillers with 8-24 adjacent (<kK>, <vK_J>) pairs (each key at
//                         most once), then <q> <kK>; the answer is that key's value.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "kv/block_pool.h"
#include "model/forward.h"
#include "tokenizer/tokenizer.h"

namespace smartgen::select {

struct EvalPrompt {
  std::vector<std::int32_t> tokens;
  std::int32_t answer = -1;      // expected next token, or -1
  std::int64_t needle_pos = -1;  // position the answer depends on, or -1
  std::string label;
};

// kInvalidArgument naming the line for malformed JSON, a missing text/tokens field or a token
// id outside the vocabulary.
Result<std::vector<EvalPrompt>> ParsePrompts(std::string_view text,
                                             const tokenizer::Tokenizer& tok);
Result<std::vector<EvalPrompt>> ReadPrompts(const std::string& path,
                                            const tokenizer::Tokenizer& tok);
std::string PromptsToJsonl(std::span<const EvalPrompt> prompts);

struct ExtendOptions {
  std::int64_t min_tokens = 400;  // each prompt's target length is drawn from [min, max]
  std::int64_t max_tokens = 500;
  float temperature = 0.8f;
  std::uint64_t seed = 1;
};

// Samples continuations (end-of-generation tokens excluded) until each prompt reaches its
// target; longer prompts are cut to it. Deterministic for a seed on one machine.
Status ExtendPrompts(model::Forward& forward, kv::BlockPool& blocks, const ExtendOptions& options,
                     std::vector<EvalPrompt>* prompts);

// n_tokens >= 64 per prompt, answer and needle_pos set. kNotFound when the vocabulary lacks
// the task's tokens (not a kv-retrieval model).
Result<std::vector<EvalPrompt>> MakeKvRetrievalPrompts(const tokenizer::Tokenizer& tok,
                                                       std::int64_t n_tokens, int n_prompts,
                                                       std::uint64_t seed);

}  // namespace smartgen::select
