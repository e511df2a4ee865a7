#include "transfer/socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace smartgen::transfer {
namespace {

// Longest single epoll_wait, so a missed wake-up can never stall longer than this.
constexpr int kMaxWaitMs = 1000;

void SetNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

Result<sockaddr_in> Resolve(const HostPort& address) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(address.port);
  if (address.host.empty() || address.host == "*") {
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    return sa;
  }
  if (inet_pton(AF_INET, address.host.c_str(), &sa.sin_addr) == 1) return sa;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(address.host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) {
    return NotFound("cannot resolve host '{}': {}", address.host, gai_strerror(rc));
  }
  sa.sin_addr = reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr;
  freeaddrinfo(found);
  return sa;
}

std::string FormatAddress(const sockaddr_in& sa) {
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
  return fmt::format("{}:{}", ip, ntohs(sa.sin_port));
}

}  // namespace

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Result<WakeFd> WakeFd::Create() {
  const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "eventfd");
  WakeFd w;
  w.fd_.reset(fd);
  return w;
}

void WakeFd::Signal() {
  const std::uint64_t one = 1;
  // The counter only grows and is never read, so the fd stays readable from now on.
  [[maybe_unused]] const ssize_t n = ::write(fd_.get(), &one, sizeof(one));
}

bool WakeFd::signalled() const {
  pollfd p{fd_.get(), POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

Result<EpollWaiter> EpollWaiter::Create(int fd, std::uint32_t events, int wake_fd) {
  EpollWaiter w;
  w.epoll_.reset(epoll_create1(EPOLL_CLOEXEC));
  if (!w.epoll_.valid()) return ErrnoStatus(errno, "epoll_create1");
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  if (epoll_ctl(w.epoll_.get(), EPOLL_CTL_ADD, fd, &ev) < 0) return ErrnoStatus(errno, "epoll_ctl");
  if (wake_fd >= 0) {
    epoll_event wake{};
    wake.events = EPOLLIN;
    wake.data.fd = wake_fd;
    if (epoll_ctl(w.epoll_.get(), EPOLL_CTL_ADD, wake_fd, &wake) < 0) {
      return ErrnoStatus(errno, "epoll_ctl");
    }
  }
  w.wake_fd_ = wake_fd;
  return w;
}

Status EpollWaiter::Wait(core::Deadline deadline) {
  for (;;) {
    const core::Nanos left = deadline.Remaining();
    if (left <= 0) return DeadlineExceeded("deadline passed while waiting for the socket");
    const int timeout_ms =
        static_cast<int>(std::min<core::Nanos>(kMaxWaitMs, (left + core::kNanosPerMilli - 1) /
                                                               core::kNanosPerMilli));
    epoll_event events[2];
    const int n = epoll_wait(epoll_.get(), events, 2, timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "epoll_wait");
    }
    bool ready = false;
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd == wake_fd_) return Cancelled("connection shut down");
      ready = true;  // readiness includes EPOLLERR/EPOLLHUP: the next I/O call reports them
    }
    if (ready) return Status::Ok();
  }
}

Result<HostPort> ParseHostPort(std::string_view address) {
  const auto colon = address.rfind(':');
  if (colon == std::string_view::npos) {
    return InvalidArgument("address '{}' is not host:port", address);
  }
  HostPort hp;
  hp.host = std::string(address.substr(0, colon));
  const std::string port(address.substr(colon + 1));
  char* end = nullptr;
  const long value = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || value < 0 || value > 65535) {
    return InvalidArgument("address '{}' has a bad port", address);
  }
  hp.port = static_cast<std::uint16_t>(value);
  return hp;
}

Result<UniqueFd> TcpListen(const HostPort& address, std::string* bound) {
  SG_ASSIGN_OR_RETURN(sockaddr_in sa, Resolve(address));
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoStatus(errno, "socket");
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) < 0) {
    return ErrnoStatus(errno, fmt::format("bind {}:{}", address.host, address.port));
  }
  if (listen(fd.get(), 64) < 0) return ErrnoStatus(errno, "listen");
  if (bound) *bound = LocalAddress(fd.get());
  return fd;
}

Result<UniqueFd> TcpConnect(const HostPort& address, core::Deadline deadline, int wake_fd) {
  SG_ASSIGN_OR_RETURN(sockaddr_in sa, Resolve(address));
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoStatus(errno, "socket");
  SetNoDelay(fd.get());
  const std::string where = FormatAddress(sa);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) < 0) {
    if (errno != EINPROGRESS) return ErrnoStatus(errno, "connect " + where);
    SG_ASSIGN_OR_RETURN(EpollWaiter waiter, EpollWaiter::Create(fd.get(), EPOLLOUT, wake_fd));
    Status s = waiter.Wait(deadline);
    if (!s.ok()) return s.WithContext("connect " + where);
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return ErrnoStatus(err, "connect " + where);
  }
  return fd;
}

Result<UniqueFd> TcpAccept(int listen_fd, int wake_fd, core::Deadline deadline) {
  SG_ASSIGN_OR_RETURN(EpollWaiter waiter, EpollWaiter::Create(listen_fd, EPOLLIN, wake_fd));
  for (;;) {
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      SetNoDelay(fd);
      return UniqueFd(fd);
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return ErrnoStatus(errno, "accept");
    SG_RETURN_IF_ERROR(waiter.Wait(deadline));
  }
}

std::string LocalAddress(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof(sa);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) < 0) return "?";
  return FormatAddress(sa);
}

std::string PeerAddress(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof(sa);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) < 0) return "?";
  return FormatAddress(sa);
}

Status WriteAll(int fd, const void* data, std::size_t size, int wake_fd, core::Deadline deadline) {
  SG_ASSIGN_OR_RETURN(EpollWaiter waiter, EpollWaiter::Create(fd, EPOLLOUT, wake_fd));
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      size -= static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return ErrnoStatus(errno, "send");
    SG_RETURN_IF_ERROR(waiter.Wait(deadline));
  }
  return Status::Ok();
}

Status ReadAll(int fd, void* data, std::size_t size, int wake_fd, core::Deadline deadline) {
  SG_ASSIGN_OR_RETURN(EpollWaiter waiter, EpollWaiter::Create(fd, EPOLLIN, wake_fd));
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::recv(fd, p, size, 0);
    if (n > 0) {
      p += n;
      size -= static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) return Unavailable("peer closed the connection");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return ErrnoStatus(errno, "recv");
    SG_RETURN_IF_ERROR(waiter.Wait(deadline));
  }
  return Status::Ok();
}

}  // namespace smartgen::transfer
