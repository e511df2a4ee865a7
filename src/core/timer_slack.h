// Timer slack: how late the kernel may end a timed wait of the calling thread.
//
// Linux lets a normal thread's timed waits (condition variables, sleeps) end up to its timer
// slack after their deadline, 50 us by default, so that wake-ups can be batched. A decode
// step's bounded waits for on-demand blocks (one per layer, a fraction of a millisecond each)
// then run about 0.08 ms past their bound: 2-3 ms of a 30-layer step. SetTimerSlack lowers it
// for the calling thread only; elsewhere (no such control) it does nothing.
//
// Thread-safety: affects the calling thread.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace smartgen::core {

// kUnavailable if the kernel refused (the slack is left as it was).
Status SetTimerSlack(std::int64_t nanos);

}  // namespace smartgen::core
