#include "transfer/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace smartgen::transfer {
namespace {

std::uint64_t DefaultBurst(double bytes_per_second) {
  const double five_ms = bytes_per_second * 0.005;
  return std::max<std::uint64_t>(RateLimiter::kMinBurstBytes, static_cast<std::uint64_t>(five_ms));
}

}  // namespace

RateLimiter::RateLimiter(double bits_per_second, std::uint64_t burst_bytes,
                         const core::Clock& clock)
    : clock_(clock),
      bytes_per_second_(bits_per_second > 0 ? bits_per_second / 8.0 : 0.0),
      burst_bytes_(burst_bytes > 0 ? burst_bytes : DefaultBurst(bits_per_second / 8.0)),
      tokens_(static_cast<double>(burst_bytes_)),
      last_refill_(clock.Now()) {}

void RateLimiter::RefillLocked(core::Nanos now) {
  if (now <= last_refill_) return;
  const double added = bytes_per_second_ * core::ToSeconds(now - last_refill_);
  tokens_ = std::min(static_cast<double>(burst_bytes_), tokens_ + added);
  last_refill_ = now;
}

core::Nanos RateLimiter::Reserve(std::uint64_t bytes) {
  const core::Nanos now = clock_.Now();
  if (unlimited()) return now;
  std::lock_guard<std::mutex> lock(mu_);
  RefillLocked(now);
  tokens_ -= static_cast<double>(bytes);
  if (tokens_ >= 0) return now;
  return now + static_cast<core::Nanos>(std::ceil(-tokens_ / bytes_per_second_ * 1e9));
}

double RateLimiter::Available() {
  if (unlimited()) return static_cast<double>(burst_bytes_);
  std::lock_guard<std::mutex> lock(mu_);
  RefillLocked(clock_.Now());
  return tokens_;
}

}  // namespace smartgen::transfer
