#include "node/router/ordered_delivery.h"

namespace smartgen::node {

bool OrderedDelivery::Push(int index, std::int32_t token, const model::TokenLogprobs* logprobs) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) return false;
  if (index < next_ || index >= max_tokens_) return true;  // a duplicate, or past the end
  std::optional<model::TokenLogprobs> lp;
  if (logprobs) lp = *logprobs;
  pending_.emplace(index, std::make_pair(token, std::move(lp)));
  while (!pending_.empty() && pending_.begin()->first == next_) {
    auto [t, t_lp] = std::move(pending_.begin()->second);
    pending_.erase(pending_.begin());
    if (next_ < 2) times_[next_] = core::NowNanos() - start_;
    ++next_;
    if (!sink_(t, t_lp ? &*t_lp : nullptr) && next_ < max_tokens_) {
      cancelled_ = true;
      return false;
    }
  }
  return true;
}

bool OrderedDelivery::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

int OrderedDelivery::delivered() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_;
}

core::Nanos OrderedDelivery::time_of(int i) const {
  std::lock_guard<std::mutex> lock(mu_);
  return times_[i];
}

}  // namespace smartgen::node
