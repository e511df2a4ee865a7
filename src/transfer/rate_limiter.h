// A token-bucket rate limiter: every byte a connection sends passes through one, so any link
// speed can be emulated without root (`--link-gbps`).
//
// Reservation model (GCRA): Reserve(n) debits n tokens at once and returns when the bytes may be
// put on the wire; tokens refill at `rate` up to `burst` bytes. Over any interval T the bytes
// released are at most burst + rate * T: the achieved rate never exceeds the configured one by
// more than one bucket, and a sender that keeps reserving reaches it exactly.
//
// Time comes from a core::Clock so that tests drive it with ManualClock. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>

#include "core/clock.h"

namespace smartgen::transfer {

class RateLimiter {
 public:
  // `bits_per_second` <= 0 means unlimited. `burst_bytes` 0 picks the default bucket:
  // max(64 KiB, 5 ms at the rate). A sender that reserves at most a quarter bucket at a time
  // loses no rate to wake-ups up to 3/4 of that late.
  explicit RateLimiter(double bits_per_second, std::uint64_t burst_bytes = 0,
                       const core::Clock& clock = core::SteadyClock());

  bool unlimited() const { return bytes_per_second_ <= 0; }
  double bytes_per_second() const { return bytes_per_second_; }
  std::uint64_t burst_bytes() const { return burst_bytes_; }

  // Debits `bytes` and returns the clock time at which they may be sent (now, when the bucket
  // holds them). Unlimited: always now.
  core::Nanos Reserve(std::uint64_t bytes);

  // Tokens in the bucket now; negative while reservations wait for refill.
  double Available();

  static constexpr std::uint64_t kMinBurstBytes = 64 * 1024;

 private:
  void RefillLocked(core::Nanos now);

  const core::Clock& clock_;
  const double bytes_per_second_;
  const std::uint64_t burst_bytes_;
  std::mutex mu_;
  double tokens_;           // guarded by mu_
  core::Nanos last_refill_; // guarded by mu_
};

}  // namespace smartgen::transfer
