#include "core/timer_slack.h"

#if defined(__linux__)
#include <sys/prctl.h>

#include <cerrno>
#include <cstring>
#endif

namespace smartgen::core {

Status SetTimerSlack(std::int64_t nanos) {
  if (nanos <= 0) return InvalidArgument("timer slack must be > 0 ns (0 restores the default)");
#if defined(__linux__)
  if (prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(nanos), 0, 0, 0) != 0) {
    return Unavailable("prctl(PR_SET_TIMERSLACK): {}", std::strerror(errno));
  }
#endif
  return Status::Ok();
}

}  // namespace smartgen::core
