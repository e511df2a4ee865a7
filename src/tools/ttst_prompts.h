// The prompt sets of `smartgen bench ttst` and how each is scored against colocated decoding.
//
//   random     - seeded printable-byte prompts of each --prompt-tokens length (any model; says
//                nothing about accuracy: latency and bytes only).
//   retrieval  - the task of kv-retrieval-tiny (select/prompt_set.h), --prompts per length: the
//                prompt ends at the query marker <q>, the key <kK> is forced as token 1 (it comes
//                from the prefill node's slot), so the answer - token 2 - is decided on the
//                decode node by its first decode step, over whatever KV that mode has there.
//                Scored by answer accuracy.
//   PATH       - a prompts file (select/prompt_set.h format, e.g. tests/data/stories260k_prompts
//                .jsonl): text. Colocated's greedy output is the reference; every mode is scored
//                by teacher-forced top-1 agreement (the request carries the reference as forced
//                tokens, the decode node reports its own argmax at every step) and by the
//                free-running exact-match length (a second, unforced request).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace smartgen::tools {

enum class PromptTask { kRandom, kText, kRetrieval };

struct BenchPrompt {
  std::string label;
  std::vector<std::int32_t> prompt;
  std::int32_t forced_first = -1;  // retrieval: the key, forced as token 1
  std::int32_t answer = -1;        // retrieval: the right token 2
};

// Prompts of one nominal length (one benchmark point each).
struct PromptGroup {
  std::int64_t n_prompt = 0;  // the length asked for; file sets: the mean length
  std::vector<BenchPrompt> prompts;
};

struct PromptSetOptions {
  std::string set = "random";  // "random" | "retrieval" | a prompts file
  std::vector<std::int64_t> prompt_tokens;
  int count = 200;             // retrieval: prompts per length
  std::uint64_t seed = 1;
  std::string model_path;      // for the vocabulary (retrieval tokens, file text)
};

struct PromptSet {
  PromptTask task = PromptTask::kRandom;
  std::vector<PromptGroup> groups;
};

Result<PromptSet> LoadPromptSet(const PromptSetOptions& options);

// A seeded random prompt of n printable-byte tokens (in every vocabulary smartgen makes).
std::vector<std::int32_t> RandomPrompt(std::int64_t n, std::uint64_t seed);

}  // namespace smartgen::tools
