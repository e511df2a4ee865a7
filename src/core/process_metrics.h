// The standard Prometheus process metrics and a build-info series, in the text format, for every
// /metrics endpoint (router and nodes):
//
//   process_start_time_seconds        gauge    Unix time the process started
//   process_cpu_seconds_total         counter  user + system CPU time
//   process_resident_memory_bytes     gauge    resident set size (VmRSS)
//   process_virtual_memory_bytes      gauge    virtual memory size
//   process_open_fds                  gauge    open file descriptors
//   process_max_fds                   gauge    the open-file limit (RLIMIT_NOFILE soft)
//   smartgen_build_info{version, compiler, build_type, role}  gauge, always 1
//
// Read from /proc/self (Linux) at each call; a value that cannot be read is left out. `role`
// names the process ("router", "prefill", "decode", "local"). Thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace smartgen::core {

void AppendProcessMetrics(std::string* out, std::string_view role);

}  // namespace smartgen::core
