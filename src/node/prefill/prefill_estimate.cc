#include "node/prefill/prefill_estimate.h"

#include <algorithm>
#include <bit>

namespace smartgen::node {

double PrefillCost(const model::ModelConfig& c, std::int64_t n_tokens) {
  const double d = c.n_embd, q = c.q_dim(), kv = c.kv_dim(), ff = c.n_ff;
  const double linear = 2.0 * (d * (q + 2 * kv) + q * d + 3.0 * d * ff);
  const double n = static_cast<double>(n_tokens);
  double per_token = 0;
  for (int l = 0; l < c.n_layers; ++l) {
    const int window = c.LayerWindow(l);
    const double keys = window > 0 ? std::min<double>(window, n / 2.0) : n / 2.0;
    per_token += linear + 4.0 * q * keys;
  }
  return n * per_token;
}

namespace {
int Bucket(std::int64_t n_tokens) {
  return std::bit_width(static_cast<std::uint64_t>(n_tokens));
}
}  // namespace

void PrefillEstimate::Record(std::int64_t n_tokens, double seconds) {
  if (n_tokens <= 0 || seconds <= 0) return;
  const double ms = seconds * 1e3 / static_cast<double>(n_tokens);
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, fresh] = rates_.emplace(Bucket(n_tokens), Rate{ms, n_tokens});
  if (!fresh) it->second = {0.7 * it->second.ms_per_token + 0.3 * ms, n_tokens};
}

double PrefillEstimate::Seconds(std::int64_t n_tokens) const {
  if (n_tokens <= 0) return 0;
  const int bucket = Bucket(n_tokens);
  std::lock_guard<std::mutex> lock(mu_);
  if (rates_.empty()) return static_cast<double>(n_tokens) * 2e-3;  // 500 tokens/s
  auto it = rates_.lower_bound(bucket);
  if (it == rates_.end()) --it;
  const Rate& rate = it->second;
  const double measured_s = static_cast<double>(rate.n_tokens) * rate.ms_per_token / 1e3;
  if (it->first == bucket) return static_cast<double>(n_tokens) * rate.ms_per_token / 1e3;
  return measured_s * PrefillCost(config_, n_tokens) / PrefillCost(config_, rate.n_tokens);
}

}  // namespace smartgen::node
