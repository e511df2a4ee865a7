// POSIX socket plumbing shared by the tcp transport and the ucx bootstrap: an owning file
// descriptor, an epoll-based readiness wait that a shutdown eventfd can interrupt, and TCP
// listen/connect/accept with deadlines, over IPv4 and IPv6. All sockets are non-blocking.
#pragma once

#include <cstdint>
#include <cstddef>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/result.h"

namespace smartgen::transfer {

// Owns a file descriptor; closes it on destruction. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// An eventfd that, once signalled, stays readable: the "shut down" flag that every wait of a
// connection watches. Signal() is thread-safe and idempotent.
class WakeFd {
 public:
  static Result<WakeFd> Create();
  void Signal();
  bool signalled() const;
  int fd() const { return fd_.get(); }

 private:
  UniqueFd fd_;
};

// Waits for `events` (EPOLLIN/EPOLLOUT) on one fd through its own epoll instance, with a
// WakeFd that aborts the wait. Move-only; one waiting thread at a time.
class EpollWaiter {
 public:
  static Result<EpollWaiter> Create(int fd, std::uint32_t events, int wake_fd);
  // OK when ready; kCancelled when woken; kDeadlineExceeded at the deadline.
  Status Wait(core::Deadline deadline);

 private:
  UniqueFd epoll_;
  int wake_fd_ = -1;
};

struct HostPort {
  std::string host;  // without brackets: "10.0.0.3", "::1", "fe80::1%eth0", "node-3"
  std::uint16_t port = 0;
};
// "host:port" where host is an IPv4 address, a bracketed IPv6 address ("[::1]:7000",
// "[::]:0" = IPv6 any, dual-stack), a name, or empty / "*" (IPv4 any). kInvalidArgument
// otherwise.
Result<HostPort> ParseHostPort(std::string_view address);
// "host:port", bracketing an IPv6 host: the inverse of ParseHostPort.
std::string FormatHostPort(std::string_view host, std::uint16_t port);

// Listens on a TCP address (port 0: any free port; a name: its first address). `bound`
// receives "ip:port" ("[ip]:port" for IPv6).
Result<UniqueFd> TcpListen(const HostPort& address, std::string* bound);
// Connects with a deadline, trying each address a name resolves to in turn; the socket has
// TCP_NODELAY set. kUnavailable when refused; the last attempt's error when none succeeds.
Result<UniqueFd> TcpConnect(const HostPort& address, core::Deadline deadline, int wake_fd = -1);
// Accepts one connection (TCP_NODELAY set). kDeadlineExceeded when none came in time.
Result<UniqueFd> TcpAccept(int listen_fd, int wake_fd, core::Deadline deadline);

// "ip:port" ("[ip]:port" for IPv6; an IPv4-mapped address as plain IPv4) of the local or
// remote end of a socket ("?" when unknown).
std::string LocalAddress(int fd);
std::string PeerAddress(int fd);

// Blocking-with-deadline helpers over a non-blocking socket (used for small bootstrap
// exchanges). kUnavailable when the peer closes.
Status WriteAll(int fd, const void* data, std::size_t size, int wake_fd, core::Deadline deadline);
Status ReadAll(int fd, void* data, std::size_t size, int wake_fd, core::Deadline deadline);

}  // namespace smartgen::transfer
