// CPU clocks as a thread on each CPU sees them: how many dependent adds a thread pinned to the CPU
// retires per second of wall time.
//
// On bare metal that is the core's clock. On a virtual machine it is the vCPU's clock times the
// share of the time the host runs it, which no counter inside the guest reports (the 2-vCPU
// AMD EPYC VM's steal time reads 0): there one vCPU ran 3.6 G adds a second while the other ran
// 2.2 G for minutes at a time, and a two-thread decode then waited at the end of every pass for the
// thread on the slow one (docs/RESULTS.md, issue 14). `smartgen bench engine --measure-bandwidth`
// prints the clocks with its floor shares, so that a share is read with the machine it came from.
//
// Thread-safety: MeasureCpuClocks starts and joins its own threads; call it from any thread.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/result.h"

namespace smartgen::core {

struct CpuClock {
  int cpu = 0;
  double ghz = 0;  // dependent adds per nanosecond of wall time
};

// The clock of each CPU this process may run on (AllowedCpus), measured one CPU at a time for
// `per_cpu` each by a thread pinned there. kUnimplemented where threads cannot be pinned
// (cpu_placement.h).
Result<std::vector<CpuClock>> MeasureCpuClocks(std::chrono::microseconds per_cpu);

// "0 3.59, 1 2.21 GHz" ("none" for no clocks).
std::string FormatCpuClocks(const std::vector<CpuClock>& clocks);

}  // namespace smartgen::core
