// LinkEstimator: what a link carries, measured rather than configured. Only frames sent while
// more data waited behind them count (then the link, not the application, set their pace):
// their bytes over the time each took (rate-limiter wait plus the transport's send), summed
// over a window that decays by kDecay per frame (about the last 50 frames).
//
// Thread-safety: none (the endpoint updates and reads it under its lock).
#pragma once

#include <cstdint>

#include "core/clock.h"

namespace smartgen::transfer {

class LinkEstimator {
 public:
  static constexpr double kDecay = 0.98;
  static constexpr double kMinBytes = 256 * 1024;  // less than this measured: no estimate yet

  void AddBacklogged(std::uint64_t bytes, core::Nanos took) {
    bytes_ = bytes_ * kDecay + static_cast<double>(bytes);
    seconds_ = seconds_ * kDecay + core::ToSeconds(took > 0 ? took : 1);
    seen_ += static_cast<double>(bytes);
  }
  // Bytes per second; 0 until enough backlogged bytes were seen.
  double bytes_per_second() const { return seen_ >= kMinBytes && seconds_ > 0 ? bytes_ / seconds_ : 0.0; }

 private:
  double bytes_ = 0, seconds_ = 0, seen_ = 0;
};

}  // namespace smartgen::transfer
