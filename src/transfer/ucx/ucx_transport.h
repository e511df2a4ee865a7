// The ucx transport: UCX UCP (Debian libucx), the path to RDMA clusters (InfiniBand, RoCE,
// eRDMA) that also runs here over UCX's tcp and shared-memory transports. Addresses are
// "host:port" of a small TCP bootstrap listener through which the two sides swap UCP worker
// addresses; the bootstrap socket then stays open as a liveness signal.
//
// Which UCX transports carry the bytes is UCX's choice, narrowed by `tls` (UCX_TLS syntax:
// "tcp", "sm,self", "rc_x,sm"...) or the UCX_TLS environment variable.
#pragma once

#include <memory>
#include <string>

#include "transfer/transport.h"
#include "transfer/ucx/ucx_context.h"

namespace smartgen::transfer {

struct UcxOptions {
  std::string tls;  // empty: UCX_TLS from the environment, else UCX's default
};

class UcxTransport final : public Transport {
 public:
  static Result<std::shared_ptr<UcxTransport>> Create(const UcxOptions& options = {});

  const TransportCaps& caps() const override { return caps_; }
  Result<std::unique_ptr<Listener>> Listen(std::string_view address) override;
  Result<std::unique_ptr<Connection>> Connect(std::string_view address,
                                              Deadline deadline) override;

 private:
  UcxTransport() = default;
  std::shared_ptr<UcxContext> context_;
  TransportCaps caps_;
  bool peer_error_handling_ = true;
};

}  // namespace smartgen::transfer
