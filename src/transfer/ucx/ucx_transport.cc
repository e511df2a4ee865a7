#include "transfer/ucx/ucx_transport.h"

#include <algorithm>
#include <cstdlib>

#include "transfer/socket.h"
#include "transfer/ucx/ucx_connection.h"

namespace smartgen::transfer {
namespace {

// Bound on the worker-address exchange of an accepted connection.
constexpr core::Nanos kBootstrapTimeout = core::Seconds(10);

class UcxListener final : public Listener {
 public:
  UcxListener(std::shared_ptr<UcxContext> context, UniqueFd socket, WakeFd wake,
              std::string address, bool peer_error_handling)
      : peer_error_handling_(peer_error_handling),
        context_(std::move(context)),
        socket_(std::move(socket)),
        wake_(std::move(wake)),
        address_(std::move(address)) {}

  std::string address() const override { return address_; }

  Result<std::unique_ptr<Connection>> Accept(Deadline deadline) override {
    if (wake_.signalled()) return Cancelled("listener shut down");
    SG_ASSIGN_OR_RETURN(UniqueFd fd, TcpAccept(socket_.get(), wake_.fd(), deadline));
    // The accept deadline bounds the wait for a connection; the address exchange that follows
    // gets its own bound (a slow peer must not be cut off by a short accept poll).
    const Deadline exchange = Deadline::After(kBootstrapTimeout);
    SG_ASSIGN_OR_RETURN(auto connection, UcxConnection::Create(context_, std::move(fd), exchange,
                                                               peer_error_handling_));
    return std::unique_ptr<Connection>(std::move(connection));
  }

  void Shutdown() override { wake_.Signal(); }

 private:
  const bool peer_error_handling_;
  std::shared_ptr<UcxContext> context_;
  UniqueFd socket_;
  WakeFd wake_;
  std::string address_;
};

// Whether a UCX_TLS list names only shared-memory transports ("sm,self", "posix,cma").
bool SharedMemoryOnly(const std::string& tls) {
  if (tls.empty()) return false;
  static const char* kShm[] = {"sm", "shm", "self", "posix", "sysv", "cma", "knem", "xpmem", "^tcp"};
  std::size_t start = 0;
  while (start <= tls.size()) {
    const std::size_t comma = std::min(tls.find(',', start), tls.size());
    const std::string name = tls.substr(start, comma - start);
    bool shm = false;
    for (const char* s : kShm) shm = shm || name == s;
    if (!shm) return false;
    start = comma + 1;
  }
  return true;
}

}  // namespace

Result<std::shared_ptr<UcxTransport>> UcxTransport::Create(const UcxOptions& options) {
  std::shared_ptr<UcxTransport> t(new UcxTransport());
  SG_ASSIGN_OR_RETURN(t->context_, UcxContext::Create(options.tls));
  // Peer-failure reporting needs a transport that has it (tcp, verbs); a shared-memory-only
  // selection has none, and asking makes UCX refuse the endpoint.
  std::string tls = options.tls;
  if (tls.empty()) {
    if (const char* env = std::getenv("UCX_TLS")) tls = env;
  }
  t->peer_error_handling_ = !SharedMemoryOnly(tls);
  t->caps_.name = "ucx";
  t->caps_.cross_process = true;
  t->caps_.zero_copy_send = true;
  t->caps_.zero_copy_receive = true;
  t->caps_.shared_memory = true;
  t->caps_.rdma = true;
  t->caps_.max_payload_parts = 1024;
  return t;
}

Result<std::unique_ptr<Listener>> UcxTransport::Listen(std::string_view address) {
  SG_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
  std::string bound;
  SG_ASSIGN_OR_RETURN(UniqueFd fd, TcpListen(hp, &bound));
  SG_ASSIGN_OR_RETURN(WakeFd wake, WakeFd::Create());
  return std::unique_ptr<Listener>(
      new UcxListener(context_, std::move(fd), std::move(wake), bound, peer_error_handling_));
}

Result<std::unique_ptr<Connection>> UcxTransport::Connect(std::string_view address,
                                                          Deadline deadline) {
  SG_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
  SG_ASSIGN_OR_RETURN(UniqueFd fd, TcpConnect(hp, deadline));
  SG_ASSIGN_OR_RETURN(auto connection, UcxConnection::Create(context_, std::move(fd), deadline,
                                                             peer_error_handling_));
  return std::unique_ptr<Connection>(std::move(connection));
}

}  // namespace smartgen::transfer
