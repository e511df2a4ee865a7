// GenerationSpec: what one request asks the model for. It is the single description of a
// request that travels from the server's router backend to the router and on to both nodes,
// with one JSON codec; the calls around it (PrefillCall, DecodeCall in protocol.h) add only
// what the route itself decides (request id, resolved transfer mode, addresses, deadline).
//
// Teacher forcing (`forced_tokens`): the output is the given reference tokens instead of the
// model's own samples - token 0 included - and the decode node reports, for every output
// index, the token it would have picked itself (the argmax of its logits at that step) in the
// final stats as `argmax_tokens`. That measures the agreement of a transfer mode with colocated
// decoding position by position, on the decode node, without one early difference derailing
// the rest (selection-quality benchmarks use it; see docs/RESULTS.md).
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "model/sampler.h"

namespace smartgen::node {

// Most choices (OpenAI's `n`) one request may ask for.
inline constexpr int kMaxChoices = 16;

struct GenerationSpec {
  std::vector<std::int32_t> prompt;        // token ids, not empty
  int max_tokens = 16;                     // >= 1, per choice
  // Choices generated from the one prompt (OpenAI's `n`), [1, kMaxChoices]: one prefill, one
  // KV transfer; choice i samples with seed sampling.seed + i. Not with teacher forcing.
  int n = 1;
  model::SamplingParams sampling;
  bool stop_at_eog = true;                 // false: an end-of-generation token does not stop it
  std::vector<std::int32_t> forced_tokens; // teacher forcing (above); empty = off
  nlohmann::json options;                  // mode-specific options (SmartGen budgets); or null

  // The sampling of choice i: seed + i (so choice 0 samples as a one-choice request).
  model::SamplingParams ChoiceSampling(int choice) const {
    model::SamplingParams p = sampling;
    p.seed += static_cast<std::uint64_t>(choice);
    return p;
  }

  bool teacher_forced() const { return !forced_tokens.empty(); }
  // The token emitted at output index i: the forced one while there are any, else `own`.
  std::int32_t Emitted(int index, std::int32_t own) const {
    return index < static_cast<int>(forced_tokens.size()) ? forced_tokens[index] : own;
  }
};

nlohmann::json ToJson(const model::SamplingParams& v);
Result<model::SamplingParams> ParseSamplingParams(const nlohmann::json& j);

// {"prompt": [...], "max_tokens": n, "n": choices, "sampling": {...}, "stop_at_eog": b,
//  "forced_tokens": [...], "options": {...}} ("n" only when > 1); `what` names the message in
// errors.
nlohmann::json ToJson(const GenerationSpec& v);
Result<GenerationSpec> ParseGenerationSpec(const nlohmann::json& j, const char* what);

}  // namespace smartgen::node
