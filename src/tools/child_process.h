// ChildProcess: a `smartgen` subprocess (a node or the router) started by a tool such as
// `bench ttst` or `demo`, with its stdout readable line by line and its stderr sent to a log
// file. RAII: the destructor terminates it (SIGTERM, then SIGKILL after a grace period), so a
// tool that fails half-way leaves no processes behind.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace smartgen::tools {

class ChildProcess {
 public:
  // Runs this executable (/proc/self/exe) with `args`; stderr goes to `log_path` ("" = inherit).
  // With `netns`, the child joins that network namespace (/var/run/netns/<netns>, as
  // `ip netns exec` does) before it runs: it fails at once (exit 126, the reason in its log)
  // when it cannot.
  static Result<ChildProcess> SpawnSelf(const std::vector<std::string>& args,
                                        const std::string& log_path, const std::string& netns = "");
  ChildProcess() = default;
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  // Reads stdout until a line starting with `prefix`; returns the line. kDeadlineExceeded, or
  // kUnavailable if the child exited first (its log path is in the message).
  Result<std::string> WaitForLine(const std::string& prefix, core::Deadline deadline);
  // SIGTERM, wait up to `grace`, then SIGKILL. Idempotent.
  void Terminate(core::Nanos grace = core::Seconds(5));
  // SIGKILL now (a crash, for failure tests).
  void Kill();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string log_path_;
  std::string buffer_;
};

}  // namespace smartgen::tools
