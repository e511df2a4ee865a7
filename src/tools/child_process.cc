#include "tools/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <thread>

namespace smartgen::tools {

Result<ChildProcess> ChildProcess::SpawnSelf(const std::vector<std::string>& args,
                                             const std::string& log_path, const std::string& netns) {
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return ErrnoStatus(errno, "readlink /proc/self/exe");
  exe[n] = '\0';
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe");
  const pid_t pid = fork();
  if (pid < 0) return ErrnoStatus(errno, "fork");
  if (pid == 0) {
    // Child: stdout to the pipe, stderr to the log; unblock the signals a tool may block.
    dup2(pipe_fds[1], STDOUT_FILENO);
    if (!log_path.empty()) {
      const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) dup2(fd, STDERR_FILENO);
    }
    sigset_t set;
    sigemptyset(&set);
    sigprocmask(SIG_SETMASK, &set, nullptr);
    if (!netns.empty()) {
      const std::string path = "/var/run/netns/" + netns;
      const int ns_fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (ns_fd < 0 || setns(ns_fd, CLONE_NEWNET) != 0) {
        dprintf(STDERR_FILENO, "cannot enter network namespace %s: %s\n", netns.c_str(),
                strerror(errno));
        _exit(126);
      }
      close(ns_fd);
    }
    std::vector<char*> argv;
    argv.push_back(exe);
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(exe, argv.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  ChildProcess c;
  c.pid_ = pid;
  c.stdout_fd_ = pipe_fds[0];
  c.log_path_ = log_path;
  return c;
}

ChildProcess::ChildProcess(ChildProcess&& o) noexcept
    : pid_(o.pid_), stdout_fd_(o.stdout_fd_), log_path_(std::move(o.log_path_)),
      buffer_(std::move(o.buffer_)) {
  o.pid_ = -1;
  o.stdout_fd_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    Terminate();
    pid_ = o.pid_;
    stdout_fd_ = o.stdout_fd_;
    log_path_ = std::move(o.log_path_);
    buffer_ = std::move(o.buffer_);
    o.pid_ = -1;
    o.stdout_fd_ = -1;
  }
  return *this;
}

ChildProcess::~ChildProcess() { Terminate(); }

Result<std::string> ChildProcess::WaitForLine(const std::string& prefix, core::Deadline deadline) {
  while (true) {
    std::size_t nl;
    while ((nl = buffer_.find('\n')) != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      if (line.rfind(prefix, 0) == 0) return line;
    }
    if (deadline.Expired()) {
      return DeadlineExceeded("child {} did not print '{}' in time (log: {})", pid_, prefix, log_path_);
    }
    pollfd p{stdout_fd_, POLLIN, 0};
    const int timeout_ms = static_cast<int>(std::min<core::Nanos>(deadline.Remaining(), core::Millis(200)) /
                                            core::kNanosPerMilli);
    const int r = poll(&p, 1, timeout_ms);
    if (r < 0 && errno != EINTR) return ErrnoStatus(errno, "poll child stdout");
    if (r > 0) {
      char buf[4096];
      const ssize_t got = read(stdout_fd_, buf, sizeof(buf));
      if (got == 0) {
        return Unavailable("child {} exited before printing '{}' (log: {})", pid_, prefix, log_path_);
      }
      if (got > 0) buffer_.append(buf, static_cast<std::size_t>(got));
    }
  }
}

void ChildProcess::Terminate(core::Nanos grace) {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    const core::Deadline deadline = core::Deadline::After(grace);
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (deadline.Expired()) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
  }
  if (stdout_fd_ >= 0) {
    close(stdout_fd_);
    stdout_fd_ = -1;
  }
}

void ChildProcess::Kill() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
}

}  // namespace smartgen::tools
