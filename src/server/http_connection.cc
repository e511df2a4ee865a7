#include "server/http_connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace smartgen::server {
namespace {

constexpr std::string_view kHeadEnd = "\r\n\r\n";

int PollMillis(const core::Deadline& deadline) {
  const core::Nanos left = deadline.Remaining();
  // Round up so that a wait never ends just before its deadline and spins.
  return static_cast<int>(std::min<core::Nanos>((left + 999'999) / 1'000'000, 3'600'000));
}

void AddressOf(const sockaddr_storage& addr, std::string& ip, int& port) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf));
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof(buf));
    port = ntohs(a->sin6_port);
  }
  ip = buf;
}

}  // namespace

HttpConnection::HttpConnection(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {
  const int flags = ::fcntl(fd_, F_GETFL, 0);
  ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
  if (ssl_ != nullptr) {
    SSL_set_fd(ssl_, fd_);
    SSL_set_accept_state(ssl_);
  }
  last_active = core::NowNanos();
}

HttpConnection::~HttpConnection() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  ::close(fd_);
}

HttpConnection::Io HttpConnection::Handshake() {
  if (ssl_ == nullptr) return Io::kProgress;
  ERR_clear_error();
  const int r = SSL_do_handshake(ssl_);
  if (r == 1) return Io::kProgress;
  switch (SSL_get_error(ssl_, r)) {
    case SSL_ERROR_WANT_READ:
      return Io::kWantRead;
    case SSL_ERROR_WANT_WRITE:
      return Io::kWantWrite;
    case SSL_ERROR_ZERO_RETURN:
      return Io::kClosed;
    default:
      ERR_clear_error();
      return Io::kError;
  }
}

ssize_t HttpConnection::RecvSome(char* dst, std::size_t n, Io* io) {
  if (ssl_ != nullptr) {
    ERR_clear_error();
    const int r = SSL_read(ssl_, dst, static_cast<int>(std::min<std::size_t>(n, 1 << 30)));
    if (r > 0) {
      *io = Io::kProgress;
      return r;
    }
    switch (SSL_get_error(ssl_, r)) {
      case SSL_ERROR_WANT_READ:
        *io = Io::kWantRead;
        break;
      case SSL_ERROR_WANT_WRITE:
        *io = Io::kWantWrite;
        break;
      case SSL_ERROR_ZERO_RETURN:
        *io = Io::kClosed;
        break;
      default:
        ERR_clear_error();
        *io = Io::kError;
    }
    return 0;
  }
  while (true) {
    const ssize_t r = ::recv(fd_, dst, n, 0);
    if (r > 0) {
      *io = Io::kProgress;
      return r;
    }
    if (r == 0) {
      *io = Io::kClosed;
      return 0;
    }
    if (errno == EINTR) continue;
    *io = (errno == EAGAIN || errno == EWOULDBLOCK) ? Io::kWantRead : Io::kError;
    return 0;
  }
}

ssize_t HttpConnection::SendSome(const char* src, std::size_t n, Io* io) {
  if (ssl_ != nullptr) {
    ERR_clear_error();
    const int r = SSL_write(ssl_, src, static_cast<int>(std::min<std::size_t>(n, 1 << 30)));
    if (r > 0) {
      *io = Io::kProgress;
      return r;
    }
    switch (SSL_get_error(ssl_, r)) {
      case SSL_ERROR_WANT_READ:
        *io = Io::kWantRead;
        break;
      case SSL_ERROR_WANT_WRITE:
        *io = Io::kWantWrite;
        break;
      default:
        ERR_clear_error();
        *io = Io::kError;
    }
    return 0;
  }
  while (true) {
    const ssize_t r = ::send(fd_, src, n, MSG_NOSIGNAL);
    if (r >= 0) {
      *io = Io::kProgress;
      return r;
    }
    if (errno == EINTR) continue;
    *io = (errno == EAGAIN || errno == EWOULDBLOCK) ? Io::kWantWrite : Io::kError;
    return 0;
  }
}

HttpConnection::Io HttpConnection::ReadAvailable(std::size_t limit) {
  if (in_off_ > 0 && in_off_ == in_.size()) {
    in_.clear();
    in_off_ = 0;
  }
  bool any = false;
  char buf[4096];
  while (buffered() < limit) {
    Io io;
    const ssize_t r = RecvSome(buf, std::min(sizeof(buf), limit - buffered()), &io);
    if (r <= 0) {
      if (io == Io::kWantRead || io == Io::kWantWrite) return any ? Io::kProgress : io;
      // A client may send its request and close its side at once: the request still counts.
      return io == Io::kClosed && HeadComplete() ? Io::kProgress : io;
    }
    in_.append(buf, static_cast<std::size_t>(r));
    any = true;
    last_active = core::NowNanos();
    if (HeadComplete()) break;
  }
  return Io::kProgress;
}

bool HttpConnection::HeadComplete() const {
  return std::string_view(in_).substr(in_off_).find(kHeadEnd) != std::string_view::npos;
}

void HttpConnection::TryWrite(std::string_view bytes) {
  while (!bytes.empty()) {
    Io io;
    const ssize_t r = SendSome(bytes.data(), bytes.size(), &io);
    if (r <= 0) return;
    bytes.remove_prefix(static_cast<std::size_t>(r));
  }
}

bool HttpConnection::Wait(short events, const core::Deadline& deadline) const {
  while (true) {
    if (deadline.Expired()) return false;
    pollfd p{fd_, events, 0};
    const int r = ::poll(&p, 1, PollMillis(deadline));
    if (r > 0) return (p.revents & POLLNVAL) == 0;
    if (r < 0 && errno != EINTR) return false;
  }
}

ssize_t HttpConnection::Read(char* dst, std::size_t n, const core::Deadline& deadline) {
  if (n == 0) return 0;
  if (buffered() > 0) {
    const std::size_t k = std::min(n, buffered());
    std::memcpy(dst, in_.data() + in_off_, k);
    in_off_ += k;
    if (in_off_ == in_.size()) {
      in_.clear();
      in_off_ = 0;
    }
    return static_cast<ssize_t>(k);
  }
  while (true) {
    Io io;
    const ssize_t r = RecvSome(dst, n, &io);
    if (r > 0) {
      last_active = core::NowNanos();
      return r;
    }
    if (io == Io::kClosed) return 0;
    if (io == Io::kError) return -1;
    if (!Wait(io == Io::kWantWrite ? POLLOUT : POLLIN, deadline)) return -1;
  }
}

bool HttpConnection::WriteAll(const char* bytes, std::size_t n, core::Nanos progress_timeout) {
  while (n > 0) {
    Io io;
    const ssize_t r = SendSome(bytes, n, &io);
    if (r > 0) {
      bytes += r;
      n -= static_cast<std::size_t>(r);
      continue;
    }
    if (io == Io::kError || io == Io::kClosed) return false;
    if (!Wait(io == Io::kWantRead ? POLLIN : POLLOUT, core::Deadline::After(progress_timeout))) {
      return false;
    }
  }
  return true;
}

bool HttpConnection::PeerGone() const {
  pollfd p{fd_, static_cast<short>(POLLIN | POLLRDHUP), 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

void HttpConnection::Shutdown(core::Nanos linger) {
  if (ssl_ != nullptr) {
    ERR_clear_error();
    SSL_shutdown(ssl_);  // sends close_notify if it can; no wait for the peer's
    ERR_clear_error();
  }
  ::shutdown(fd_, SHUT_WR);
  if (linger <= 0) return;
  const core::Deadline until = core::Deadline::After(linger);
  char buf[16384];
  while (Wait(POLLIN, until)) {
    const ssize_t r = ::recv(fd_, buf, sizeof(buf), 0);
    if (r == 0) return;
    if (r < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) return;
  }
}

bool ConnectionStream::is_readable() const {
  return c_->buffered() > 0 || !read_deadline_.Expired();
}

bool ConnectionStream::is_writable() const {
  return !failed_ && !c_->PeerGone();
}

ssize_t ConnectionStream::read(char* ptr, size_t size) {
  return c_->Read(ptr, size, read_deadline_);
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
  if (failed_ || !c_->WriteAll(ptr, size, write_timeout_)) {
    failed_ = true;
    return -1;
  }
  return static_cast<ssize_t>(size);
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  port = 0;
  if (::getpeername(c_->fd(), reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    AddressOf(addr, ip, port);
  }
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  port = 0;
  if (::getsockname(c_->fd(), reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    AddressOf(addr, ip, port);
  }
}

socket_t ConnectionStream::socket() const {
  return c_->fd() < FD_SETSIZE ? c_->fd() : 0;
}

}  // namespace smartgen::server
