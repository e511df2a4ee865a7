// CPU placement: which CPUs a process and its compute threads run on (`--cpus`).
//
// Two engines on one machine (a prefill node and a decode node, or a node and a benchmark) that
// each run as many compute threads as there are cores take turns on every core: a decode step
// waits for whichever of its threads the scheduler parked behind the other engine's prefill.
// Giving each process its own CPUs (`smartgen serve prefill --cpus 0-7`, `serve decode --cpus
// 8-15`) keeps them apart: PlaceProcessOn confines the process, and a ThreadPool made with the
// same list pins each of its lanes to one CPU of it (thread_pool.h).
//
// A CPU list is written as Linux and taskset write it: "0-3,8,10-11" (ascending ranges and
// single CPUs, comma-separated). Only Linux places threads; elsewhere every call is refused
// with kUnimplemented, so an explicit --cpus never goes unheeded.
//
// Thread-safety: ParseCpuList, FormatCpuList and AllowedCpus are safe anywhere. PlaceProcessOn
// changes process-wide state (the calling thread and the default of threads made later): call
// it at start-up, before the threads it should cover exist.
#pragma once

#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/result.h"
#include "core/status.h"

namespace smartgen::core {

// The CPUs this process may run on now (its affinity mask), ascending.
Result<std::vector<int>> AllowedCpus();

// "0-3,8" -> {0, 1, 2, 3, 8}. kInvalidArgument for an empty list, a malformed or descending
// range, a CPU listed twice, or a CPU this process may not run on (the error names them and
// the CPUs it may use).
Result<std::vector<int>> ParseCpuList(std::string_view text);

// {0, 1, 2, 3, 8} -> "0-3,8" (ranges for consecutive CPUs; the list need not be sorted).
std::string FormatCpuList(const std::vector<int>& cpus);

// Confines the calling thread, and every thread created afterwards with default attributes
// (std::thread included), to `cpus`, whichever thread creates it: a compute thread pinned to
// one CPU that starts a server thread does not hand it that single CPU. Threads that exist
// already keep their mask.
Status PlaceProcessOn(const std::vector<int>& cpus);

// Pins the calling thread, or `thread`, to one CPU.
Status PinThisThreadTo(int cpu);
Status PinThreadTo(std::thread& thread, int cpu);

}  // namespace smartgen::core
