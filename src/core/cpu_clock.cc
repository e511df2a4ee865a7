#include "core/cpu_clock.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <thread>

#include "core/clock.h"
#include "core/cpu_placement.h"

namespace smartgen::core {
namespace {

// Adds per clock read: a chain this long runs for a few microseconds at any plausible clock.
constexpr int kAddsPerRead = 4096;

// Dependent adds per nanosecond on the calling thread for about `ns`. The empty asm makes each
// add wait for the one before (the compiler can neither fold the chain nor vectorise it), and
// the loop's own counter runs beside the chain, so the chain is one add per cycle.
double AddsPerNano(Nanos ns) {
  std::uint64_t x = 0, adds = 0;  // x only carries the chain
  const Nanos start = NowNanos();
  Nanos now = start;
  do {
    for (int i = 0; i < kAddsPerRead; ++i) {
      x += 1;
      asm volatile("" : "+r"(x));
    }
    adds += kAddsPerRead;
    now = NowNanos();
  } while (now - start < ns);
  return static_cast<double>(adds) / static_cast<double>(now - start);
}

}  // namespace

Result<std::vector<CpuClock>> MeasureCpuClocks(std::chrono::microseconds per_cpu) {
  SG_ASSIGN_OR_RETURN(const std::vector<int> cpus, AllowedCpus());
  const Nanos ns = std::max<Nanos>(per_cpu.count(), 1) * kNanosPerMicro;
  std::vector<CpuClock> clocks;
  for (const int cpu : cpus) {
    Status pinned = Status::Ok();
    double ghz = 0;
    std::thread t([&] {
      pinned = PinThisThreadTo(cpu);
      if (pinned.ok()) ghz = AddsPerNano(ns);
    });
    t.join();
    SG_RETURN_IF_ERROR(pinned);
    clocks.push_back({cpu, ghz});
  }
  return clocks;
}

std::string FormatCpuClocks(const std::vector<CpuClock>& clocks) {
  if (clocks.empty()) return "none";
  std::string out;
  for (const CpuClock& c : clocks) {
    out += fmt::format("{}{} {:.2f}", out.empty() ? "" : ", ", c.cpu, c.ghz);
  }
  return out + " GHz";
}

}  // namespace smartgen::core
