// Workload: the requests that arrive at a simulated cluster.
//   fixed batch - n requests at t = 0 (or every `interval` seconds: a closed sweep);
//   Poisson     - exponential inter-arrival times at `rate` requests/s, seeded;
//   trace file  - one request per line: "arrival_s prompt_tokens output_tokens" (whitespace
//                 or comma separated, '#' starts a comment).
// Prompt/output lengths of batch and Poisson workloads are fixed or drawn uniformly from
// [min, max] (seeded).
//
// Thread-safety: plain data and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "sim/event_queue.h"

namespace smartgen::sim {

struct RequestSpec {
  Seconds arrival = 0;
  std::int64_t prompt_tokens = 0;
  int output_tokens = 0;
};

struct WorkloadOptions {
  std::int64_t prompt_min = 4096, prompt_max = 4096;
  int output_min = 64, output_max = 64;
  std::uint64_t seed = 1;
};

std::vector<RequestSpec> FixedBatch(int n, Seconds interval, const WorkloadOptions& o);
std::vector<RequestSpec> Poisson(double rate_per_s, int n, const WorkloadOptions& o);
// kNotFound for a missing file, kInvalidArgument naming the line for a malformed one.
Result<std::vector<RequestSpec>> ReadTrace(const std::string& path);

}  // namespace smartgen::sim
