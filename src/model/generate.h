// Generate: prefill a prompt into a sequence, then decode token by token with a Sampler.
// The single-process (colocated) path used by `smartgen run`, `bench engine` and tests.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/result.h"
#include "kv/sequence_kv.h"
#include "model/forward.h"
#include "model/sampler.h"

namespace smartgen::model {

struct GenerateOptions {
  int max_tokens = 32;         // tokens to generate (the first comes from the prefill)
  SamplingParams sampling;
  bool stop_at_eog = true;     // stop after an end-of-generation token (it is returned)
};

struct GenerateStats {
  std::int64_t n_prompt = 0;
  std::int64_t n_generated = 0;
  double prefill_seconds = 0;  // prompt -> first token's logits
  double decode_seconds = 0;   // the remaining tokens
  double prefill_tok_s() const { return prefill_seconds > 0 ? n_prompt / prefill_seconds : 0; }
  double decode_tok_s() const {
    return decode_seconds > 0 && n_generated > 1 ? (n_generated - 1) / decode_seconds : 0;
  }
};

// Called with each generated token as soon as it is sampled; return false to stop.
using TokenCallback = std::function<bool(std::int32_t token)>;

// `seq` must be empty (or hold a prefix the prompt continues). Returns the generated ids.
Result<std::vector<std::int32_t>> Generate(Forward& forward, kv::SequenceKv& seq,
                                           std::span<const std::int32_t> prompt,
                                           const GenerateOptions& options,
                                           GenerateStats* stats = nullptr,
                                           const TokenCallback& on_token = nullptr);

}  // namespace smartgen::model
