#include "transfer/frame_io.h"

namespace smartgen::transfer {

Status SendOwnedFrame(Connection& connection, const OwnedFrame& frame, Deadline deadline) {
  const EncodedHeader header = EncodeHeader(frame.header);
  const ConstBytes payload(frame.payload);
  if (payload.empty()) return connection.Send(header, {}, deadline);
  return connection.Send(header, std::span<const ConstBytes>(&payload, 1), deadline);
}

Result<std::vector<std::byte>> ReceiveOwnedPayload(Connection& connection,
                                                   const FrameHeader& header, Deadline deadline) {
  std::vector<std::byte> payload(header.payload_bytes);
  if (!payload.empty()) {
    const MutableBytes part(payload);
    SG_RETURN_IF_ERROR(
        connection.ReceivePayload(std::span<const MutableBytes>(&part, 1), deadline));
  }
  if (Checksum(ConstBytes(payload)) != header.payload_checksum) {
    return DataLoss("{} frame payload checksum mismatch", FrameTypeName(header.type));
  }
  return payload;
}

Result<OwnedFrame> ReceiveOwnedFrame(Connection& connection, Deadline deadline,
                                     std::size_t max_payload) {
  EncodedHeader bytes;
  SG_RETURN_IF_ERROR(connection.ReceiveHeader(bytes, deadline));
  SG_ASSIGN_OR_RETURN(FrameHeader header, DecodeHeader(bytes));
  if (header.payload_bytes > max_payload) {
    return DataLoss("{} frame announces {} payload bytes, limit {}", FrameTypeName(header.type),
                    header.payload_bytes, max_payload);
  }
  SG_ASSIGN_OR_RETURN(auto payload, ReceiveOwnedPayload(connection, header, deadline));
  return OwnedFrame{header, std::move(payload)};
}

}  // namespace smartgen::transfer
