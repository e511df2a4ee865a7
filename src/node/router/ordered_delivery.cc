#include "node/router/ordered_delivery.h"

#include <algorithm>

namespace smartgen::node {

OrderedDelivery::OrderedDelivery(ChoiceSink sink, core::Nanos start, int max_tokens, int n_choices)
    : sink_(std::move(sink)),
      start_(start),
      max_tokens_(max_tokens),
      choices_(static_cast<std::size_t>(std::max(n_choices, 1))) {}

bool OrderedDelivery::PushChoice(int choice, int index, std::int32_t token,
                                 const model::TokenLogprobs* logprobs) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) return false;
  if (choice < 0 || choice >= static_cast<int>(choices_.size())) return true;
  Choice& c = choices_[static_cast<std::size_t>(choice)];
  // An ended choice, a duplicate, or past the end.
  if (c.ended || index < c.next || index >= max_tokens_) return true;
  std::optional<model::TokenLogprobs> lp;
  if (logprobs) lp = *logprobs;
  c.pending.emplace(index, std::make_pair(token, std::move(lp)));
  while (!c.ended && !c.pending.empty() && c.pending.begin()->first == c.next) {
    auto [t, t_lp] = std::move(c.pending.begin()->second);
    c.pending.erase(c.pending.begin());
    if (choice == 0 && c.next < 2) times_[c.next] = core::NowNanos() - start_;
    ++c.next;
    const bool more = sink_(choice, t, t_lp ? &*t_lp : nullptr);
    if (!more && c.next < max_tokens_) c.stopped_early = true;
    if (!more || c.next >= max_tokens_) {
      c.ended = true;
      c.pending.clear();
      ++ended_;
    }
  }
  if (ended_ == static_cast<int>(choices_.size()) &&
      std::any_of(choices_.begin(), choices_.end(),
                  [](const Choice& x) { return x.stopped_early; })) {
    cancelled_ = true;
    return false;
  }
  return true;
}

bool OrderedDelivery::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

bool OrderedDelivery::complete() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ended_ == static_cast<int>(choices_.size());
}

int OrderedDelivery::delivered() const {
  std::lock_guard<std::mutex> lock(mu_);
  return choices_[0].next;
}

core::Nanos OrderedDelivery::time_of(int i) const {
  std::lock_guard<std::mutex> lock(mu_);
  return times_[i];
}

}  // namespace smartgen::node
