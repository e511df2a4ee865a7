// PrefillEstimate: how long the prefill node expects an n-token prefill to take, from the
// prefills it measured (the start-up prefill, then every request's) - what SmartGen's
// proactive set is sized by (select::ProactiveBudgetFor: the link's rate x this time).
//
// Measurements are kept per log2(n) bucket as an EWMA of the time per token. A prompt in a
// bucket without one is estimated from the nearest measured bucket at or above it (else the
// longest measured), scaled by the compute the two lengths take (PrefillCost): attention makes
// a longer prompt slower per token, so a 256-token start-up prefill alone, scaled linearly,
// read a 4096-token prefill as 0.6 of its time.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

#include "model/model_config.h"

namespace smartgen::node {

// An n-token prefill's compute, up to a constant: per token and layer, 2 FLOPs per
// linear-layer weight plus 4 x q_dim per attended key (on average n / 2 keys, at most a
// sliding layer's window).
double PrefillCost(const model::ModelConfig& c, std::int64_t n_tokens);

class PrefillEstimate {
 public:
  explicit PrefillEstimate(const model::ModelConfig& config) : config_(config) {}

  void Record(std::int64_t n_tokens, double seconds);
  // Seconds; before any measurement, n_tokens / 500.
  double Seconds(std::int64_t n_tokens) const;

 private:
  struct Rate {
    double ms_per_token;    // EWMA
    std::int64_t n_tokens;  // the bucket's last measured prompt length
  };

  const model::ModelConfig& config_;
  mutable std::mutex mu_;
  std::map<int, Rate> rates_;  // log2(n_tokens) bucket -> its rate
};

}  // namespace smartgen::node
