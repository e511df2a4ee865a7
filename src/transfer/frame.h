// The wire format of the transfer protocol: every message is one frame, a fixed 64-byte header
// followed by `payload_bytes` of payload.
//
// Header (little-endian):
//   0 magic "SGKF" | 4 type | 5 priority | 6 flags | 8 request_id | 16 op_id | 24 layer
//   28 kv_head | 32 first_block | 36 n_blocks | 40 generation | 44 aux | 48 payload_bytes
//   52 payload_checksum (xxh3-64 of the payload) | 60 header_checksum (xxh3 of bytes 0..59)
//
// A header whose magic or checksum is wrong means the byte stream can no longer be trusted:
// the connection is closed (kDataLoss). A payload whose checksum is wrong costs only that
// frame: its blocks are rejected and sent or requested again.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "transfer/checksum.h"
#include "transfer/types.h"

namespace smartgen::transfer {

inline constexpr std::size_t kFrameHeaderBytes = 64;
inline constexpr std::uint32_t kFrameMagic = 0x464B4753;  // "SGKF" little-endian
// Largest payload a peer may announce; bigger is a protocol error (kDataLoss).
inline constexpr std::uint32_t kMaxFramePayload = 64u << 20;

enum class FrameType : std::uint8_t {
  kHello = 1,          // handshake offer/answer: HandshakeMessage payload
  kAuth = 2,           // connector's proof of the token
  kWelcome = 3,        // handshake accepted
  kRefuse = 4,         // handshake refused: aux = StatusCode, payload = reason text
  kData = 10,          // blocks of one BlockRange; flags say push or pull reply
  kAck = 11,           // AckEntry list: verdicts on pushed data frames
  kPull = 12,          // PullEntry list: send me these blocks (op_id = puller's transfer)
  kPullFail = 13,      // the pull op_id cannot be served: aux = StatusCode, payload = text
  kCancelOp = 14,      // forget op_id (a pull the peer serves for us)
  kCancelRequest = 15, // everything about request_id is cancelled; generation = new generation
  kFinishRequest = 16, // the peer has what it wants of request_id: release its lease
  kHeartbeat = 17,     // keep-alive when nothing else was sent
  kControl = 18,       // opaque control message for the node layer: aux = type
  kGoodbye = 19,       // orderly close
};
std::string_view FrameTypeName(FrameType type);

// Flags of kData frames.
inline constexpr std::uint16_t kFlagPush = 1u << 0;       // unsolicited push; the receiver acks
inline constexpr std::uint16_t kFlagPullReply = 1u << 1;  // reply to the receiver's pull op_id
// Flags of kPull frames.
inline constexpr std::uint16_t kFlagPullAppend = 1u << 2;  // add these ranges (else: replace)

struct FrameHeader {
  FrameType type = FrameType::kHeartbeat;
  Priority priority = Priority::kOnDemand;
  std::uint16_t flags = 0;
  std::uint64_t request_id = 0;
  std::uint64_t op_id = 0;
  std::uint32_t layer = 0;
  std::uint32_t kv_head = 0;
  std::uint32_t first_block = 0;
  std::uint32_t n_blocks = 0;
  std::uint32_t generation = 0;
  std::uint32_t aux = 0;
  std::uint32_t payload_bytes = 0;
  std::uint64_t payload_checksum = 0;

  // The wire's unsigned fields as the block vocabulary's signed ones: a value past INT32_MAX
  // turns negative, which Endpoint's range validation refuses.
  BlockRange range() const {
    return {request_id,
            {static_cast<std::int32_t>(layer), static_cast<std::int32_t>(kv_head),
             static_cast<std::int32_t>(first_block), static_cast<std::int32_t>(n_blocks)}};
  }
  void set_range(const BlockRange& r) {
    request_id = r.request_id;
    layer = static_cast<std::uint32_t>(r.layer);
    kv_head = static_cast<std::uint32_t>(r.kv_head);
    first_block = static_cast<std::uint32_t>(r.first_block);
    n_blocks = static_cast<std::uint32_t>(r.n_blocks);
  }
};

using EncodedHeader = std::array<std::byte, kFrameHeaderBytes>;

// Serialises `header` and seals it with the header checksum.
EncodedHeader EncodeHeader(const FrameHeader& header);
// Parses and verifies a header. kDataLoss when the magic, checksum, type or length is wrong.
Result<FrameHeader> DecodeHeader(std::span<const std::byte, kFrameHeaderBytes> bytes);

// A verdict on one pushed data frame (kAck payload entry).
struct AckEntry {
  std::uint64_t op_id = 0;
  BlockRange range;
  StatusCode code = StatusCode::kOk;  // kOk accepted; kDataLoss corrupt; kCancelled stale; ...
};
// One range asked for by a kPull frame.
struct PullEntry {
  BlockRange range;
  std::uint32_t generation = 0;
};

std::vector<std::byte> EncodeAcks(std::span<const AckEntry> acks);
Result<std::vector<AckEntry>> DecodeAcks(ConstBytes payload);
std::vector<std::byte> EncodePulls(std::span<const PullEntry> pulls);
Result<std::vector<PullEntry>> DecodePulls(ConstBytes payload);

// A frame whose payload the engine owns (control frames; data frames reference block memory
// instead and are built by the sender).
struct OwnedFrame {
  FrameHeader header;
  std::vector<std::byte> payload;
};
// Sets payload_bytes and payload_checksum from `payload`.
OwnedFrame MakeFrame(FrameHeader header, std::vector<std::byte> payload = {});

// Little-endian field codecs shared by the frame payload formats.
class WireWriter {
 public:
  void U8(std::uint8_t v) { bytes_.push_back(static_cast<std::byte>(v)); }
  void U16(std::uint16_t v) { Raw(&v, 2); }
  void U32(std::uint32_t v) { Raw(&v, 4); }
  void U64(std::uint64_t v) { Raw(&v, 8); }
  void Bytes(ConstBytes b) { bytes_.insert(bytes_.end(), b.begin(), b.end()); }
  std::vector<std::byte> Take() { return std::move(bytes_); }

 private:
  void Raw(const void* p, std::size_t n);
  std::vector<std::byte> bytes_;
};

class WireReader {
 public:
  explicit WireReader(ConstBytes bytes) : bytes_(bytes) {}
  bool U8(std::uint8_t* v);
  bool U16(std::uint16_t* v) { return Raw(v, 2); }
  bool U32(std::uint32_t* v) { return Raw(v, 4); }
  bool U64(std::uint64_t* v) { return Raw(v, 8); }
  std::size_t remaining() const { return bytes_.size() - pos_; }
  ConstBytes Rest() const { return bytes_.subspan(pos_); }

 private:
  bool Raw(void* p, std::size_t n);
  ConstBytes bytes_;
  std::size_t pos_ = 0;
};

}  // namespace smartgen::transfer
