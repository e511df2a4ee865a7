#include "raw_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <functional>

namespace smartgen::server::testing {

RawClient::RawClient(int port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

RawClient::~RawClient() {
  Close();
}

void RawClient::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool RawClient::Send(std::string_view bytes) {
  while (!bytes.empty() && fd_ >= 0) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return fd_ >= 0;
}

std::string RawClient::ReadUntil(const std::function<bool(const std::string&)>& pred,
                                 core::Nanos timeout) {
  const core::Deadline deadline = core::Deadline::After(timeout);
  char buf[16384];
  while (fd_ >= 0 && !pred(received_) && !deadline.Expired()) {
    pollfd p{fd_, POLLIN, 0};
    const int ms = static_cast<int>(std::max<core::Nanos>(1, deadline.Remaining() / 1'000'000));
    if (::poll(&p, 1, ms) <= 0) continue;
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    received_.append(buf, static_cast<std::size_t>(n));
  }
  return received_;
}

bool RawClient::ReadUntilClosed(core::Nanos timeout) {
  const core::Deadline deadline = core::Deadline::After(timeout);
  char buf[16384];
  while (fd_ >= 0 && !deadline.Expired()) {
    pollfd p{fd_, POLLIN, 0};
    const int ms = static_cast<int>(std::max<core::Nanos>(1, deadline.Remaining() / 1'000'000));
    if (::poll(&p, 1, ms) <= 0) continue;
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;  // closed (0) or reset
    received_.append(buf, static_cast<std::size_t>(n));
  }
  return false;
}

std::string RequestHead(std::string_view method, std::string_view path,
                        std::string_view extra_headers) {
  std::string head;
  head.append(method).append(" ").append(path).append(" HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  head.append(extra_headers).append("\r\n");
  return head;
}

int StatusOf(const std::string& raw) {
  if (raw.rfind("HTTP/1.", 0) != 0 || raw.size() < 12) return 0;
  return std::atoi(raw.c_str() + 9);
}

}  // namespace smartgen::server::testing
