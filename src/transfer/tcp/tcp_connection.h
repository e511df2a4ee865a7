// A Connection over one TCP socket. Each frame goes out as a single gathered sendmsg (header
// plus every payload span: no per-block syscall, no staging copy) and comes in with one readv
// for the header and one for the payload, scattered straight into block memory. Waits use
// epoll (one instance per direction, so the sending and the receiving thread never contend)
// together with an eventfd that Shutdown() signals.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <memory>
#include <string>

#include "transfer/socket.h"
#include "transfer/transport.h"

namespace smartgen::transfer {

class TcpConnection final : public Connection {
 public:
  // Unsent bytes the kernel may hold per socket (TCP_NOTSENT_LOWAT); see Create.
  static constexpr int kMaxUnsentBytes = 128 * 1024;
  // Takes a connected non-blocking socket.
  static Result<std::unique_ptr<TcpConnection>> Create(UniqueFd socket);
  ~TcpConnection() override;

  using Connection::Send;
  Status Send(std::span<const std::byte, kFrameHeaderBytes> header,
              std::span<const ConstBytes> payload, Deadline deadline,
              std::shared_ptr<const void> keepalive) override;
  Status ReceiveHeader(std::span<std::byte, kFrameHeaderBytes> header, Deadline deadline) override;
  Status ReceivePayload(std::span<const MutableBytes> parts, Deadline deadline) override;
  void Shutdown() override;
  std::string Describe() const override { return description_; }
  double DeliveryBytesPerSecond() const override;

 private:
  TcpConnection(UniqueFd socket, WakeFd wake, EpollWaiter send_waiter, EpollWaiter recv_waiter);
  // Moves every byte of iov[0..count) (advancing it in place).
  Status SendIov(iovec* iov, std::size_t count, Deadline deadline);
  Status RecvIov(iovec* iov, std::size_t count, Deadline deadline);

  UniqueFd socket_;
  WakeFd wake_;
  EpollWaiter send_waiter_;  // used only by the sending thread
  EpollWaiter recv_waiter_;  // used only by the receiving thread
  std::atomic<bool> shut_down_{false};
  std::string description_;
  std::vector<iovec> send_iov_;  // scratch of the sending thread
  std::vector<iovec> recv_iov_;  // scratch of the receiving thread
};

}  // namespace smartgen::transfer
