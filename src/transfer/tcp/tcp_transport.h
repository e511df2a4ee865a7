// The tcp transport: the default, works everywhere. Addresses are "host:port" (IPv4 or a
// name; port 0 on Listen picks a free port). See tcp_connection.h for the data path.
#pragma once

#include "transfer/transport.h"

namespace smartgen::transfer {

class TcpTransport final : public Transport {
 public:
  TcpTransport();
  const TransportCaps& caps() const override { return caps_; }
  Result<std::unique_ptr<Listener>> Listen(std::string_view address) override;
  Result<std::unique_ptr<Connection>> Connect(std::string_view address,
                                              Deadline deadline) override;

 private:
  TransportCaps caps_;
};

}  // namespace smartgen::transfer
