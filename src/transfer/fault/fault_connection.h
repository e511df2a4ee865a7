// A Connection that forwards to another one and injects the faults of a FaultPlan on the
// frames it sends: drop, corrupt, duplicate, reorder, delay, and cut the link after N bytes.
// Receives pass through (wrap the other end to fault the other direction).
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "transfer/fault/fault_plan.h"
#include "transfer/transport.h"

namespace smartgen::transfer {

class FaultConnection final : public Connection {
 public:
  FaultConnection(std::unique_ptr<Connection> inner, const FaultPlan& plan,
                  std::uint64_t connection_index, std::shared_ptr<FaultStats> stats);
  ~FaultConnection() override;

  using Connection::Send;
  Status Send(std::span<const std::byte, kFrameHeaderBytes> header,
              std::span<const ConstBytes> payload, Deadline deadline,
              std::shared_ptr<const void> keepalive) override;
  Status ReceiveHeader(std::span<std::byte, kFrameHeaderBytes> header, Deadline deadline) override;
  Status ReceivePayload(std::span<const MutableBytes> parts, Deadline deadline) override;
  void Shutdown() override;
  std::string Describe() const override { return "fault(" + inner_->Describe() + ")"; }
  double DeliveryBytesPerSecond() const override { return inner_->DeliveryBytesPerSecond(); }

 private:
  struct Copy {
    EncodedHeader header;
    std::vector<std::byte> payload;
  };
  bool Chance(double p);
  bool Listed(const std::vector<std::uint64_t>& list, std::uint64_t index) const;
  Copy MakeCopy(std::span<const std::byte, kFrameHeaderBytes> header,
                std::span<const ConstBytes> payload) const;
  void CorruptCopy(Copy& copy);
  // Sends through the inner connection, cutting it once disconnect_after_bytes is reached.
  Status Forward(std::span<const std::byte, kFrameHeaderBytes> header,
                 std::span<const ConstBytes> payload, Deadline deadline);

  std::unique_ptr<Connection> inner_;
  const FaultPlan plan_;
  std::shared_ptr<FaultStats> stats_;
  std::mt19937_64 rng_;            // used by the sending thread only
  std::uint64_t matching_frames_ = 0;
  std::uint64_t bytes_sent_ = 0;
  bool cut_ = false;
  std::unique_ptr<Copy> held_;     // a reordered frame waiting for the next one
};

}  // namespace smartgen::transfer
