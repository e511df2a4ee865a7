#include "transfer/loopback/loopback_connection.h"

namespace smartgen::transfer {

LoopbackConnection::LoopbackConnection(std::shared_ptr<BytePipe> out, std::shared_ptr<BytePipe> in,
                                       std::string description)
    : out_(std::move(out)), in_(std::move(in)), description_(std::move(description)) {}

LoopbackConnection::~LoopbackConnection() { Shutdown(); }

std::pair<std::unique_ptr<Connection>, std::unique_ptr<Connection>> LoopbackConnection::MakePair(
    std::size_t capacity, const std::string& name) {
  auto a_to_b = std::make_shared<BytePipe>(capacity);
  auto b_to_a = std::make_shared<BytePipe>(capacity);
  return {std::make_unique<LoopbackConnection>(a_to_b, b_to_a, "loopback client->" + name),
          std::make_unique<LoopbackConnection>(b_to_a, a_to_b, "loopback " + name + "<-client")};
}

Status LoopbackConnection::Send(std::span<const std::byte, kFrameHeaderBytes> header,
                                std::span<const ConstBytes> payload, Deadline deadline,
                                std::shared_ptr<const void> keepalive) {
  parts_.clear();
  parts_.push_back(ConstBytes(header.data(), header.size()));
  parts_.insert(parts_.end(), payload.begin(), payload.end());
  return out_->Write(parts_, deadline);
}

Status LoopbackConnection::ReceiveHeader(std::span<std::byte, kFrameHeaderBytes> header,
                                         Deadline deadline) {
  const MutableBytes part(header.data(), header.size());
  return in_->Read(std::span<const MutableBytes>(&part, 1), deadline);
}

Status LoopbackConnection::ReceivePayload(std::span<const MutableBytes> parts, Deadline deadline) {
  return in_->Read(parts, deadline);
}

void LoopbackConnection::Shutdown() {
  out_->CloseWriter();
  in_->CloseReader();
}

}  // namespace smartgen::transfer
