// A Connection made of two BytePipes inside one process: the loopback transport's data path.
// Frames are copied into and out of the pipes (one memcpy each way).
#pragma once

#include <memory>
#include <string>

#include "transfer/loopback/byte_pipe.h"
#include "transfer/transport.h"

namespace smartgen::transfer {

class LoopbackConnection final : public Connection {
 public:
  LoopbackConnection(std::shared_ptr<BytePipe> out, std::shared_ptr<BytePipe> in,
                     std::string description);
  ~LoopbackConnection() override;

  // Two connected ends; `capacity` bytes may be in flight each way.
  static std::pair<std::unique_ptr<Connection>, std::unique_ptr<Connection>> MakePair(
      std::size_t capacity, const std::string& name);

  using Connection::Send;
  Status Send(std::span<const std::byte, kFrameHeaderBytes> header,
              std::span<const ConstBytes> payload, Deadline deadline,
              std::shared_ptr<const void> keepalive) override;
  Status ReceiveHeader(std::span<std::byte, kFrameHeaderBytes> header, Deadline deadline) override;
  Status ReceivePayload(std::span<const MutableBytes> parts, Deadline deadline) override;
  void Shutdown() override;
  std::string Describe() const override { return description_; }

 private:
  std::shared_ptr<BytePipe> out_;
  std::shared_ptr<BytePipe> in_;
  std::string description_;
  std::vector<ConstBytes> parts_;  // scratch of the sending thread
};

}  // namespace smartgen::transfer
