#include "transfer/tcp/tcp_connection.h"

#include "transfer/tcp/tcp_delivery_rate.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>

#include <fmt/format.h>

namespace smartgen::transfer {
namespace {

// Advances an iovec array past `n` bytes; returns the index of the first unfinished entry.
std::size_t Advance(iovec* iov, std::size_t count, std::size_t first, std::size_t n) {
  while (first < count && n > 0) {
    if (n >= iov[first].iov_len) {
      n -= iov[first].iov_len;
      iov[first].iov_len = 0;
      ++first;
    } else {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + n;
      iov[first].iov_len -= n;
      n = 0;
    }
  }
  while (first < count && iov[first].iov_len == 0) ++first;
  return first;
}

}  // namespace

Result<std::unique_ptr<TcpConnection>> TcpConnection::Create(UniqueFd socket) {
  // Keep little unsent data in the kernel: past kMaxUnsentBytes a send waits (EPOLLOUT comes
  // when the unsent part drains below it). The engine's queue, not the socket buffer, then
  // holds the backlog, so a high-priority frame (on-demand) overtakes what is queued instead of
  // waiting behind megabytes the socket took earlier, and the endpoint's measured link rate is
  // the link's, not how fast the socket buffer filled.
  const int unsent = kMaxUnsentBytes;
  setsockopt(socket.get(), IPPROTO_TCP, TCP_NOTSENT_LOWAT, &unsent, sizeof(unsent));
  SG_ASSIGN_OR_RETURN(WakeFd wake, WakeFd::Create());
  SG_ASSIGN_OR_RETURN(EpollWaiter send_waiter,
                      EpollWaiter::Create(socket.get(), EPOLLOUT, wake.fd()));
  SG_ASSIGN_OR_RETURN(EpollWaiter recv_waiter,
                      EpollWaiter::Create(socket.get(), EPOLLIN | EPOLLRDHUP, wake.fd()));
  return std::unique_ptr<TcpConnection>(new TcpConnection(
      std::move(socket), std::move(wake), std::move(send_waiter), std::move(recv_waiter)));
}

TcpConnection::TcpConnection(UniqueFd socket, WakeFd wake, EpollWaiter send_waiter,
                             EpollWaiter recv_waiter)
    : socket_(std::move(socket)),
      wake_(std::move(wake)),
      send_waiter_(std::move(send_waiter)),
      recv_waiter_(std::move(recv_waiter)) {
  description_ =
      fmt::format("tcp {}->{}", LocalAddress(socket_.get()), PeerAddress(socket_.get()));
}

TcpConnection::~TcpConnection() { Shutdown(); }

double TcpConnection::DeliveryBytesPerSecond() const { return TcpDeliveryBytesPerSecond(socket_.get()); }

void TcpConnection::Shutdown() {
  if (shut_down_.exchange(true)) return;
  wake_.Signal();
  ::shutdown(socket_.get(), SHUT_RDWR);
}

Status TcpConnection::SendIov(iovec* iov, std::size_t count, Deadline deadline) {
  std::size_t first = Advance(iov, count, 0, 0);
  while (first < count) {
    if (shut_down_.load(std::memory_order_relaxed)) return Cancelled("connection shut down");
    msghdr msg{};
    msg.msg_iov = iov + first;
    msg.msg_iovlen = std::min<std::size_t>(count - first, IOV_MAX);
    const ssize_t n = ::sendmsg(socket_.get(), &msg, MSG_NOSIGNAL);
    if (n >= 0) {
      first = Advance(iov, count, first, static_cast<std::size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return ErrnoStatus(errno, "send on " + description_);
    }
    SG_RETURN_IF_ERROR(send_waiter_.Wait(deadline));
  }
  return Status::Ok();
}

Status TcpConnection::RecvIov(iovec* iov, std::size_t count, Deadline deadline) {
  std::size_t first = Advance(iov, count, 0, 0);
  while (first < count) {
    if (shut_down_.load(std::memory_order_relaxed)) return Cancelled("connection shut down");
    const ssize_t n = ::readv(socket_.get(), iov + first,
                              static_cast<int>(std::min<std::size_t>(count - first, IOV_MAX)));
    if (n > 0) {
      first = Advance(iov, count, first, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) return Unavailable("{}: peer closed the connection", description_);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return ErrnoStatus(errno, "receive on " + description_);
    }
    SG_RETURN_IF_ERROR(recv_waiter_.Wait(deadline));
  }
  return Status::Ok();
}

Status TcpConnection::Send(std::span<const std::byte, kFrameHeaderBytes> header,
                           std::span<const ConstBytes> payload, Deadline deadline,
                           std::shared_ptr<const void> keepalive) {
  send_iov_.clear();
  send_iov_.push_back({const_cast<std::byte*>(header.data()), header.size()});
  for (ConstBytes part : payload) {
    if (!part.empty()) send_iov_.push_back({const_cast<std::byte*>(part.data()), part.size()});
  }
  return SendIov(send_iov_.data(), send_iov_.size(), deadline);
}

Status TcpConnection::ReceiveHeader(std::span<std::byte, kFrameHeaderBytes> header,
                                    Deadline deadline) {
  iovec iov{header.data(), header.size()};
  return RecvIov(&iov, 1, deadline);
}

Status TcpConnection::ReceivePayload(std::span<const MutableBytes> parts, Deadline deadline) {
  recv_iov_.clear();
  for (MutableBytes part : parts) {
    if (!part.empty()) recv_iov_.push_back({part.data(), part.size()});
  }
  return RecvIov(recv_iov_.data(), recv_iov_.size(), deadline);
}

}  // namespace smartgen::transfer
