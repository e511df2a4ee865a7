// The fault transport: wraps any transport and injects the faults of a FaultPlan into every
// connection it makes or accepts (see fault_connection.h), deterministically from the seed.
// Used by the fault-matrix tests; `smartgen bench` never uses it.
#pragma once

#include <atomic>
#include <memory>

#include "transfer/fault/fault_plan.h"
#include "transfer/transport.h"

namespace smartgen::transfer {

class FaultTransport final : public Transport {
 public:
  FaultTransport(std::shared_ptr<Transport> inner, FaultPlan plan);

  const TransportCaps& caps() const override { return caps_; }
  Result<std::unique_ptr<Listener>> Listen(std::string_view address) override;
  Result<std::unique_ptr<Connection>> Connect(std::string_view address,
                                              Deadline deadline) override;

  // What was injected so far, over all connections.
  const FaultStats& stats() const { return *stats_; }

  // Wraps one connection (used by the listener; public for tests that build pairs by hand).
  std::unique_ptr<Connection> Wrap(std::unique_ptr<Connection> connection);

 private:
  std::shared_ptr<Transport> inner_;
  const FaultPlan plan_;
  TransportCaps caps_;
  std::shared_ptr<FaultStats> stats_;
  std::atomic<std::uint64_t> connections_{0};
};

}  // namespace smartgen::transfer
