#include "transfer/transport_factory.h"

#include "transfer/loopback/loopback_transport.h"
#include "transfer/tcp/tcp_transport.h"
#include "transfer/ucx/ucx_transport.h"

namespace smartgen::transfer {

Result<std::shared_ptr<Transport>> MakeTransport(std::string_view name,
                                                 const TransportOptions& options) {
  if (name == "tcp") return std::shared_ptr<Transport>(std::make_shared<TcpTransport>());
  if (name == "loopback") {
    return std::shared_ptr<Transport>(
        std::make_shared<LoopbackTransport>(options.loopback_pipe_bytes));
  }
  if (name == "ucx") {
    SG_ASSIGN_OR_RETURN(auto ucx, UcxTransport::Create(UcxOptions{options.ucx_tls}));
    return std::shared_ptr<Transport>(std::move(ucx));
  }
  return InvalidArgument("unknown transport '{}' (tcp, ucx, loopback)", name);
}

}  // namespace smartgen::transfer
