// OrderedDelivery: hands a request's tokens to the client in output order, exactly once,
// whichever node (prefill: token 0; decode: the rest) or attempt (a failover re-runs the
// request elsewhere) produced them. Indices below the next one to deliver are duplicates and
// dropped; later ones wait until the gap before them is filled.
//
// Thread-safety: all methods are thread-safe; the sink is called under the object's lock, in
// order, from whichever thread pushed the token that completed the run.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "core/clock.h"
#include "model/sampler.h"

namespace smartgen::node {

class OrderedDelivery {
 public:
  // Gets each token in order, with its log-probabilities when the nodes sent them (else null;
  // valid during the call); returns false when the client has gone.
  using Sink = std::function<bool(std::int32_t token, const model::TokenLogprobs* logprobs)>;
  // `start`: the request's start (for times).
  OrderedDelivery(Sink sink, core::Nanos start, int max_tokens)
      : sink_(std::move(sink)), start_(start), max_tokens_(max_tokens) {}
  OrderedDelivery(std::function<bool(std::int32_t)> sink, core::Nanos start, int max_tokens)
      : OrderedDelivery([s = std::move(sink)](std::int32_t t, const model::TokenLogprobs*) {
          return s(t);
        }, start, max_tokens) {}

  // False once the client has gone (the sink said stop). A sink that says stop at the last
  // token of the request is not a cancellation: the request is complete.
  bool Push(int index, std::int32_t token, const model::TokenLogprobs* logprobs = nullptr);
  bool cancelled() const;
  // Tokens delivered so far (the index of the next one).
  int delivered() const;
  // Request start -> token i delivered, for i = 0, 1 (0 if not yet).
  core::Nanos time_of(int i) const;

 private:
  const Sink sink_;
  const core::Nanos start_;
  const int max_tokens_;
  mutable std::mutex mu_;
  int next_ = 0;
  std::map<int, std::pair<std::int32_t, std::optional<model::TokenLogprobs>>> pending_;
  bool cancelled_ = false;
  core::Nanos times_[2] = {0, 0};
};

}  // namespace smartgen::node
