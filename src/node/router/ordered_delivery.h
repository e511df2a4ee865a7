// OrderedDelivery: hands a request's tokens to the client in output order, exactly once per
// choice, whichever node (prefill: token 0; decode: the rest) or attempt (a failover re-runs the
// request elsewhere) produced them. Each of the request's n choices (GenerationSpec::n) is its
// own sequence: indices below the next one to deliver are duplicates and dropped; later ones
// wait until the gap before them is filled.
//
// A choice ends when it has delivered max_tokens tokens or when the sink says stop for it;
// once every choice has ended and at least one of them was stopped before its last token, the
// client has gone (cancelled()). A sink that says stop at a choice's last token is not a
// cancellation: that choice is complete.
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
#include <vector>

#include "core/clock.h"
#include "model/sampler.h"

namespace smartgen::node {

class OrderedDelivery {
 public:
  // Gets each token of choice `choice` in order, with its log-probabilities when the nodes sent
  // them (else null; valid during the call); returns false to end that choice (the client has
  // what it wants of it, or has gone).
  using ChoiceSink =
      std::function<bool(int choice, std::int32_t token, const model::TokenLogprobs* logprobs)>;
  using Sink = std::function<bool(std::int32_t token, const model::TokenLogprobs* logprobs)>;
  // `start`: the request's start (for times); `max_tokens` per choice; n_choices >= 1.
  OrderedDelivery(ChoiceSink sink, core::Nanos start, int max_tokens, int n_choices);
  // One choice.
  OrderedDelivery(Sink sink, core::Nanos start, int max_tokens)
      : OrderedDelivery(
            ChoiceSink([s = std::move(sink)](int, std::int32_t t, const model::TokenLogprobs* lp) {
              return s(t, lp);
            }),
            start, max_tokens, 1) {}
  OrderedDelivery(std::function<bool(std::int32_t)> sink, core::Nanos start, int max_tokens)
      : OrderedDelivery(
            ChoiceSink([s = std::move(sink)](int, std::int32_t t, const model::TokenLogprobs*) {
              return s(t);
            }),
            start, max_tokens, 1) {}

  // False once the client has gone (cancelled()). A token of an ended choice, or of a choice
  // out of range, is dropped.
  bool PushChoice(int choice, int index, std::int32_t token,
                  const model::TokenLogprobs* logprobs = nullptr);
  bool Push(int index, std::int32_t token, const model::TokenLogprobs* logprobs = nullptr) {
    return PushChoice(0, index, token, logprobs);
  }
  bool cancelled() const;
  // Every choice has ended (delivered all its tokens, or stopped by the sink).
  bool complete() const;
  // Tokens of choice 0 delivered so far (the index of its next one).
  int delivered() const;
  // Request start -> token i of choice 0 delivered, for i = 0, 1 (0 if not yet).
  core::Nanos time_of(int i) const;

 private:
  struct Choice {
    int next = 0;
    std::map<int, std::pair<std::int32_t, std::optional<model::TokenLogprobs>>> pending;
    bool ended = false;
    bool stopped_early = false;  // the sink said stop before its last token
  };

  const ChoiceSink sink_;
  const core::Nanos start_;
  const int max_tokens_;
  mutable std::mutex mu_;
  std::vector<Choice> choices_;
  int ended_ = 0;
  bool cancelled_ = false;
  core::Nanos times_[2] = {0, 0};
};

}  // namespace smartgen::node
