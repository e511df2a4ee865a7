#include "core/clock.h"

namespace smartgen::core {
namespace {

class SteadyClockImpl final : public Clock {
 public:
  Nanos Now() const override { return NowNanos(); }
};

}  // namespace

Clock& SteadyClock() {
  static SteadyClockImpl clock;
  return clock;
}

}  // namespace smartgen::core
