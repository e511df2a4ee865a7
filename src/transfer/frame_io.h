// Sending and receiving whole engine-owned frames over a Connection (handshake and control
// frames; data frames are scattered straight into block memory by the endpoint instead).
#pragma once

#include <cstddef>

#include "core/result.h"
#include "transfer/frame.h"
#include "transfer/transport.h"

namespace smartgen::transfer {

Status SendOwnedFrame(Connection& connection, const OwnedFrame& frame, Deadline deadline);

// Receives one frame and verifies its payload checksum (kDataLoss on mismatch, or when the
// payload exceeds `max_payload`).
Result<OwnedFrame> ReceiveOwnedFrame(Connection& connection, Deadline deadline,
                                     std::size_t max_payload = kMaxFramePayload);

// Receives the payload of a frame whose header is known, and verifies it.
Result<std::vector<std::byte>> ReceiveOwnedPayload(Connection& connection,
                                                   const FrameHeader& header, Deadline deadline);

}  // namespace smartgen::transfer
