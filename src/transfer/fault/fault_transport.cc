#include "transfer/fault/fault_transport.h"

#include "transfer/fault/fault_connection.h"

namespace smartgen::transfer {
namespace {

class FaultListener final : public Listener {
 public:
  FaultListener(std::unique_ptr<Listener> inner, FaultTransport* transport)
      : inner_(std::move(inner)), transport_(transport) {}
  std::string address() const override { return inner_->address(); }
  Result<std::unique_ptr<Connection>> Accept(Deadline deadline) override {
    SG_ASSIGN_OR_RETURN(auto connection, inner_->Accept(deadline));
    return transport_->Wrap(std::move(connection));
  }
  void Shutdown() override { inner_->Shutdown(); }

 private:
  std::unique_ptr<Listener> inner_;
  FaultTransport* transport_;  // outlives its listeners
};

}  // namespace

FaultTransport::FaultTransport(std::shared_ptr<Transport> inner, FaultPlan plan)
    : inner_(std::move(inner)), plan_(std::move(plan)), stats_(std::make_shared<FaultStats>()) {
  caps_ = inner_->caps();
  caps_.name = "fault(" + caps_.name + ")";
  caps_.zero_copy_send = false;  // corrupt/reorder copy frames
}

std::unique_ptr<Connection> FaultTransport::Wrap(std::unique_ptr<Connection> connection) {
  return std::make_unique<FaultConnection>(std::move(connection), plan_, connections_++, stats_);
}

Result<std::unique_ptr<Listener>> FaultTransport::Listen(std::string_view address) {
  SG_ASSIGN_OR_RETURN(auto listener, inner_->Listen(address));
  return std::unique_ptr<Listener>(new FaultListener(std::move(listener), this));
}

Result<std::unique_ptr<Connection>> FaultTransport::Connect(std::string_view address,
                                                            Deadline deadline) {
  SG_ASSIGN_OR_RETURN(auto connection, inner_->Connect(address, deadline));
  return Wrap(std::move(connection));
}

}  // namespace smartgen::transfer
