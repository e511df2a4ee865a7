// The loopback transport: connections inside one process, for hermetic tests. Addresses are
// names scoped to one LoopbackTransport object ("" or "*" on Listen picks a fresh name), so
// both endpoints of a test share the transport.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>

#include "transfer/transport.h"

namespace smartgen::transfer {

class LoopbackTransport final : public Transport {
 public:
  // `pipe_capacity`: bytes in flight per direction (the "socket buffer").
  explicit LoopbackTransport(std::size_t pipe_capacity = 1 << 20);
  ~LoopbackTransport() override;

  const TransportCaps& caps() const override { return caps_; }
  Result<std::unique_ptr<Listener>> Listen(std::string_view address) override;
  Result<std::unique_ptr<Connection>> Connect(std::string_view address,
                                              Deadline deadline) override;

  struct Backlog;  // pending connections of one listener (internal)

 private:
  // The listeners by name; shared with each listener, which unregisters itself on shutdown
  // even when it outlives the transport.
  struct Registry {
    std::mutex mu;
    std::map<std::string, std::shared_ptr<Backlog>, std::less<>> listeners;  // guarded by mu
    std::uint64_t next_name = 0;                                             // guarded by mu
  };
  TransportCaps caps_;
  const std::size_t pipe_capacity_;
  const std::shared_ptr<Registry> registry_ = std::make_shared<Registry>();
};

}  // namespace smartgen::transfer
