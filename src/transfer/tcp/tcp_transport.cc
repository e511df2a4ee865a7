#include "transfer/tcp/tcp_transport.h"

#include <atomic>

#include "transfer/socket.h"
#include "transfer/tcp/tcp_connection.h"

namespace smartgen::transfer {
namespace {

class TcpListener final : public Listener {
 public:
  TcpListener(UniqueFd socket, WakeFd wake, std::string address)
      : socket_(std::move(socket)), wake_(std::move(wake)), address_(std::move(address)) {}

  std::string address() const override { return address_; }

  Result<std::unique_ptr<Connection>> Accept(Deadline deadline) override {
    if (wake_.signalled()) return Cancelled("listener shut down");
    SG_ASSIGN_OR_RETURN(UniqueFd fd, TcpAccept(socket_.get(), wake_.fd(), deadline));
    SG_ASSIGN_OR_RETURN(auto connection, TcpConnection::Create(std::move(fd)));
    return std::unique_ptr<Connection>(std::move(connection));
  }

  void Shutdown() override { wake_.Signal(); }

 private:
  UniqueFd socket_;
  WakeFd wake_;
  std::string address_;
};

}  // namespace

TcpTransport::TcpTransport() {
  caps_.name = "tcp";
  caps_.cross_process = true;
  caps_.zero_copy_send = true;     // one sendmsg straight from block memory
  caps_.zero_copy_receive = true;  // readv straight into sink memory
  caps_.max_payload_parts = 4096;  // split into IOV_MAX chunks internally
}

Result<std::unique_ptr<Listener>> TcpTransport::Listen(std::string_view address) {
  SG_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
  std::string bound;
  SG_ASSIGN_OR_RETURN(UniqueFd fd, TcpListen(hp, &bound));
  SG_ASSIGN_OR_RETURN(WakeFd wake, WakeFd::Create());
  return std::unique_ptr<Listener>(new TcpListener(std::move(fd), std::move(wake), bound));
}

Result<std::unique_ptr<Connection>> TcpTransport::Connect(std::string_view address,
                                                          Deadline deadline) {
  SG_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
  SG_ASSIGN_OR_RETURN(UniqueFd fd, TcpConnect(hp, deadline));
  SG_ASSIGN_OR_RETURN(auto connection, TcpConnection::Create(std::move(fd)));
  return std::unique_ptr<Connection>(std::move(connection));
}

}  // namespace smartgen::transfer
