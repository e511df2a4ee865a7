// Time for smartgen: a monotonic nanosecond clock that tests can drive, and deadlines.
//
// Every wait in smartgen has a Deadline. Code that needs the time takes a `Clock&` so that
// tests can substitute ManualClock; production code uses SteadyClock() (process-wide,
// thread-safe, monotonic).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>

namespace smartgen::core {

using Nanos = std::int64_t;  // nanoseconds on a Clock's monotonic time line

constexpr Nanos kNanosPerMicro = 1'000;
constexpr Nanos kNanosPerMilli = 1'000'000;
constexpr Nanos kNanosPerSecond = 1'000'000'000;

inline constexpr Nanos Millis(std::int64_t ms) { return ms * kNanosPerMilli; }
inline constexpr Nanos Seconds(double s) { return static_cast<Nanos>(s * kNanosPerSecond); }
inline constexpr double ToMillis(Nanos ns) { return static_cast<double>(ns) / kNanosPerMilli; }
inline constexpr double ToSeconds(Nanos ns) { return static_cast<double>(ns) / kNanosPerSecond; }

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time in nanoseconds. Thread-safe.
  virtual Nanos Now() const = 0;
};

// The process-wide monotonic clock (std::chrono::steady_clock).
Clock& SteadyClock();

// Steady-clock time without the virtual call, for hot paths.
inline Nanos NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A clock that only moves when told to. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Nanos start = 0) : now_(start) {}
  Nanos Now() const override { return now_.load(std::memory_order_acquire); }
  void Advance(Nanos delta) { now_.fetch_add(delta, std::memory_order_acq_rel); }
  void Set(Nanos t) { now_.store(t, std::memory_order_release); }

 private:
  std::atomic<Nanos> now_;
};

// A point in time on a Clock's time line after which a wait gives up.
class Deadline {
 public:
  static Deadline Never() { return Deadline(std::numeric_limits<Nanos>::max()); }
  static Deadline At(Nanos when) { return Deadline(when); }
  static Deadline After(Nanos timeout, const Clock& clock = SteadyClock()) {
    return Deadline(clock.Now() + timeout);
  }

  Nanos when() const { return when_; }
  bool is_never() const { return when_ == std::numeric_limits<Nanos>::max(); }
  bool Expired(const Clock& clock = SteadyClock()) const { return clock.Now() >= when_; }
  // Nanoseconds left (0 when expired; a large value for Never()).
  Nanos Remaining(const Clock& clock = SteadyClock()) const {
    if (is_never()) return std::numeric_limits<Nanos>::max() / 2;
    const Nanos left = when_ - clock.Now();
    return left > 0 ? left : 0;
  }
  // The earlier of two deadlines.
  friend Deadline Earlier(Deadline a, Deadline b) { return a.when_ <= b.when_ ? a : b; }

 private:
  explicit Deadline(Nanos when) : when_(when) {}
  Nanos when_;
};

// Measures elapsed wall time on the steady clock.
class Stopwatch {
 public:
  Stopwatch() : start_(NowNanos()) {}
  void Reset() { start_ = NowNanos(); }
  Nanos ElapsedNanos() const { return NowNanos() - start_; }
  double ElapsedSeconds() const { return ToSeconds(ElapsedNanos()); }
  double ElapsedMillis() const { return ToMillis(ElapsedNanos()); }

 private:
  Nanos start_;
};

}  // namespace smartgen::core
