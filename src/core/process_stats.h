// Resident memory of this process, from /proc/self/status (Linux). 0 when unavailable.
#pragma once

#include <cstdint>

namespace smartgen::core {

std::int64_t PeakRssBytes();     // VmHWM: the high-water mark since start
std::int64_t CurrentRssBytes();  // VmRSS

}  // namespace smartgen::core
