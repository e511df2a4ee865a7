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
#include <vector>

#include <fmt/format.h>

namespace smartgen::transfer {
namespace {

// Longest single epoll_wait, so a missed wake-up can never stall longer than this.
constexpr int kMaxWaitMs = 1000;

void SetNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// One socket address of either family.
struct SockAddr {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family() const { return storage.ss_family; }
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
};

SockAddr FromAddrinfo(const addrinfo& ai) {
  SockAddr a;
  std::memcpy(&a.storage, ai.ai_addr, ai.ai_addrlen);
  a.length = static_cast<socklen_t>(ai.ai_addrlen);
  return a;
}

// Every address `address` stands for, in the resolver's order: a literal is one address, a
// name may be several (IPv4 and IPv6). Empty or "*" is IPv4 any.
Result<std::vector<SockAddr>> Resolve(const HostPort& address, bool passive) {
  if (address.host.empty() || address.host == "*") {
    SockAddr a;
    auto* sin = reinterpret_cast<sockaddr_in*>(&a.storage);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(address.port);
    sin->sin_addr.s_addr = htonl(INADDR_ANY);
    a.length = sizeof(sockaddr_in);
    return std::vector<SockAddr>{a};
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  const int rc = getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return NotFound("cannot resolve host '{}': {}", address.host, gai_strerror(rc));
  }
  std::vector<SockAddr> out;
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET || ai->ai_family == AF_INET6) out.push_back(FromAddrinfo(*ai));
  }
  freeaddrinfo(found);
  if (out.empty()) return NotFound("host '{}' has no IPv4 or IPv6 address", address.host);
  return out;
}

std::string FormatAddress(const sockaddr_storage& ss) {
  char ip[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET) {
    const auto& sin = reinterpret_cast<const sockaddr_in&>(ss);
    inet_ntop(AF_INET, &sin.sin_addr, ip, sizeof(ip));
    return fmt::format("{}:{}", ip, ntohs(sin.sin_port));
  }
  if (ss.ss_family == AF_INET6) {
    const auto& sin6 = reinterpret_cast<const sockaddr_in6&>(ss);
    if (IN6_IS_ADDR_V4MAPPED(&sin6.sin6_addr)) {  // an IPv4 peer of a dual-stack socket
      inet_ntop(AF_INET, &sin6.sin6_addr.s6_addr[12], ip, sizeof(ip));
      return fmt::format("{}:{}", ip, ntohs(sin6.sin6_port));
    }
    inet_ntop(AF_INET6, &sin6.sin6_addr, ip, sizeof(ip));
    return fmt::format("[{}]:{}", ip, ntohs(sin6.sin6_port));
  }
  return "?";
}

std::string FormatAddress(const SockAddr& a) { return FormatAddress(a.storage); }

// One non-blocking connect attempt to `sa`, waited for until `deadline`.
Result<UniqueFd> ConnectOne(const SockAddr& sa, core::Deadline deadline, int wake_fd) {
  UniqueFd fd(socket(sa.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoStatus(errno, "socket");
  SetNoDelay(fd.get());
  const std::string where = FormatAddress(sa);
  if (connect(fd.get(), sa.get(), sa.length) < 0) {
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
  std::string_view host = address.substr(0, colon);
  if (!host.empty() && host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') {
      return InvalidArgument("address '{}' has an unclosed '['", address);
    }
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return InvalidArgument("address '{}': write an IPv6 host in brackets, e.g. [::1]:7000", address);
  }
  hp.host = std::string(host);
  const std::string port(address.substr(colon + 1));
  char* end = nullptr;
  const long value = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || value < 0 || value > 65535) {
    return InvalidArgument("address '{}' has a bad port", address);
  }
  hp.port = static_cast<std::uint16_t>(value);
  return hp;
}

std::string FormatHostPort(std::string_view host, std::uint16_t port) {
  if (host.find(':') != std::string_view::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

Result<UniqueFd> TcpListen(const HostPort& address, std::string* bound) {
  SG_ASSIGN_OR_RETURN(std::vector<SockAddr> addresses, Resolve(address, /*passive=*/true));
  const SockAddr& sa = addresses.front();
  UniqueFd fd(socket(sa.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoStatus(errno, "socket");
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (sa.family() == AF_INET6) {
    // "[::]" takes IPv4 peers too, whatever the host's net.ipv6.bindv6only says.
    int zero = 0;
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
  }
  if (bind(fd.get(), sa.get(), sa.length) < 0) {
    return ErrnoStatus(errno, "bind " + FormatHostPort(address.host, address.port));
  }
  if (listen(fd.get(), 64) < 0) return ErrnoStatus(errno, "listen");
  if (bound) *bound = LocalAddress(fd.get());
  return fd;
}

Result<UniqueFd> TcpConnect(const HostPort& address, core::Deadline deadline, int wake_fd) {
  SG_ASSIGN_OR_RETURN(std::vector<SockAddr> addresses, Resolve(address, /*passive=*/false));
  Status last;
  for (const SockAddr& sa : addresses) {
    Result<UniqueFd> fd = ConnectOne(sa, deadline, wake_fd);
    if (fd.ok()) return fd;
    last = fd.status();
    // Shut down or out of time: no point in trying the name's other addresses.
    if (last.code() == StatusCode::kCancelled || last.code() == StatusCode::kDeadlineExceeded) break;
  }
  return last;
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
  sockaddr_storage sa{};
  socklen_t len = sizeof(sa);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) < 0) return "?";
  return FormatAddress(sa);
}

std::string PeerAddress(int fd) {
  sockaddr_storage sa{};
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
