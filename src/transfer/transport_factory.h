// Makes a transport by name, for tools and tests that choose one at run time
// (`--transport tcp|ucx|loopback`). The engine itself never switches on names.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/result.h"
#include "transfer/transport.h"

namespace smartgen::transfer {

struct TransportOptions {
  std::string ucx_tls;                       // ucx: UCX_TLS value; empty = environment/default
  std::size_t loopback_pipe_bytes = 1 << 20; // loopback: bytes in flight per direction
};

// "tcp", "ucx" or "loopback"; kInvalidArgument for anything else.
Result<std::shared_ptr<Transport>> MakeTransport(std::string_view name,
                                                 const TransportOptions& options = {});

}  // namespace smartgen::transfer
