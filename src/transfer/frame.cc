#include "transfer/frame.h"

#include <bit>
#include <cstring>

#include <xxhash.h>  // libxxhash: optimised even in debug builds

namespace smartgen::transfer {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the wire format is little-endian; add byte swaps for big-endian hosts");

constexpr std::size_t kAckEntryBytes = 40;
constexpr std::size_t kPullEntryBytes = 32;

template <typename T>
void Put(std::byte* base, std::size_t offset, T value) {
  std::memcpy(base + offset, &value, sizeof(T));
}
template <typename T>
T Get(const std::byte* base, std::size_t offset) {
  T value;
  std::memcpy(&value, base + offset, sizeof(T));
  return value;
}

bool KnownType(std::uint8_t t) {
  return (t >= 1 && t <= 4) || (t >= 10 && t <= 19);
}

// Ranges travel as a u64 request id and four u32 fields; the signed fields read back from
// values past INT32_MAX are negative, which Endpoint's range validation refuses.
void WriteRange(WireWriter& w, const BlockRange& r) {
  FrameHeader h;
  h.set_range(r);
  w.U64(h.request_id);
  w.U32(h.layer);
  w.U32(h.kv_head);
  w.U32(h.first_block);
  w.U32(h.n_blocks);
}
bool ReadRange(WireReader& r, BlockRange* out) {
  FrameHeader h;
  if (!(r.U64(&h.request_id) && r.U32(&h.layer) && r.U32(&h.kv_head) && r.U32(&h.first_block) &&
        r.U32(&h.n_blocks))) {
    return false;
  }
  *out = h.range();
  return true;
}

}  // namespace

std::string_view FrameTypeName(FrameType type) {
  switch (type) {
    case FrameType::kHello: return "HELLO";
    case FrameType::kAuth: return "AUTH";
    case FrameType::kWelcome: return "WELCOME";
    case FrameType::kRefuse: return "REFUSE";
    case FrameType::kData: return "DATA";
    case FrameType::kAck: return "ACK";
    case FrameType::kPull: return "PULL";
    case FrameType::kPullFail: return "PULL_FAIL";
    case FrameType::kCancelOp: return "CANCEL_OP";
    case FrameType::kCancelRequest: return "CANCEL_REQUEST";
    case FrameType::kFinishRequest: return "FINISH_REQUEST";
    case FrameType::kHeartbeat: return "HEARTBEAT";
    case FrameType::kControl: return "CONTROL";
    case FrameType::kGoodbye: return "GOODBYE";
  }
  return "UNKNOWN";
}

EncodedHeader EncodeHeader(const FrameHeader& h) {
  EncodedHeader out{};
  std::byte* p = out.data();
  Put<std::uint32_t>(p, 0, kFrameMagic);
  Put<std::uint8_t>(p, 4, static_cast<std::uint8_t>(h.type));
  Put<std::uint8_t>(p, 5, static_cast<std::uint8_t>(h.priority));
  Put<std::uint16_t>(p, 6, h.flags);
  Put<std::uint64_t>(p, 8, h.request_id);
  Put<std::uint64_t>(p, 16, h.op_id);
  Put<std::uint32_t>(p, 24, h.layer);
  Put<std::uint32_t>(p, 28, h.kv_head);
  Put<std::uint32_t>(p, 32, h.first_block);
  Put<std::uint32_t>(p, 36, h.n_blocks);
  Put<std::uint32_t>(p, 40, h.generation);
  Put<std::uint32_t>(p, 44, h.aux);
  Put<std::uint32_t>(p, 48, h.payload_bytes);
  Put<std::uint64_t>(p, 52, h.payload_checksum);
  Put<std::uint32_t>(p, 60, static_cast<std::uint32_t>(XXH3_64bits(p, 60)));
  return out;
}

Result<FrameHeader> DecodeHeader(std::span<const std::byte, kFrameHeaderBytes> bytes) {
  const std::byte* p = bytes.data();
  if (Get<std::uint32_t>(p, 0) != kFrameMagic) {
    return DataLoss("frame header has bad magic {:#010x}", Get<std::uint32_t>(p, 0));
  }
  if (Get<std::uint32_t>(p, 60) != static_cast<std::uint32_t>(XXH3_64bits(p, 60))) {
    return DataLoss("frame header checksum mismatch");
  }
  const auto type = Get<std::uint8_t>(p, 4);
  const auto priority = Get<std::uint8_t>(p, 5);
  if (!KnownType(type)) return DataLoss("unknown frame type {}", type);
  if (priority >= kNumPriorities) return DataLoss("bad frame priority {}", priority);
  FrameHeader h;
  h.type = static_cast<FrameType>(type);
  h.priority = static_cast<Priority>(priority);
  h.flags = Get<std::uint16_t>(p, 6);
  h.request_id = Get<std::uint64_t>(p, 8);
  h.op_id = Get<std::uint64_t>(p, 16);
  h.layer = Get<std::uint32_t>(p, 24);
  h.kv_head = Get<std::uint32_t>(p, 28);
  h.first_block = Get<std::uint32_t>(p, 32);
  h.n_blocks = Get<std::uint32_t>(p, 36);
  h.generation = Get<std::uint32_t>(p, 40);
  h.aux = Get<std::uint32_t>(p, 44);
  h.payload_bytes = Get<std::uint32_t>(p, 48);
  h.payload_checksum = Get<std::uint64_t>(p, 52);
  if (h.payload_bytes > kMaxFramePayload) {
    return DataLoss("frame payload of {} bytes exceeds the {} byte limit", h.payload_bytes,
                    kMaxFramePayload);
  }
  return h;
}

std::vector<std::byte> EncodeAcks(std::span<const AckEntry> acks) {
  WireWriter w;
  for (const AckEntry& a : acks) {
    w.U64(a.op_id);
    WriteRange(w, a.range);
    w.U8(static_cast<std::uint8_t>(a.code));
    for (int i = 0; i < 7; ++i) w.U8(0);
  }
  return w.Take();
}

Result<std::vector<AckEntry>> DecodeAcks(ConstBytes payload) {
  if (payload.size() % kAckEntryBytes != 0) return DataLoss("ACK payload of {} bytes", payload.size());
  std::vector<AckEntry> out(payload.size() / kAckEntryBytes);
  WireReader r(payload);
  for (AckEntry& a : out) {
    std::uint8_t code = 0, pad = 0;
    if (!r.U64(&a.op_id) || !ReadRange(r, &a.range) || !r.U8(&code)) return DataLoss("short ACK");
    for (int i = 0; i < 7; ++i) r.U8(&pad);
    if (code > static_cast<std::uint8_t>(StatusCode::kInternal)) return DataLoss("bad ACK code");
    a.code = static_cast<StatusCode>(code);
  }
  return out;
}

std::vector<std::byte> EncodePulls(std::span<const PullEntry> pulls) {
  WireWriter w;
  for (const PullEntry& e : pulls) {
    WriteRange(w, e.range);
    w.U32(e.generation);
    w.U32(0);
  }
  return w.Take();
}

Result<std::vector<PullEntry>> DecodePulls(ConstBytes payload) {
  if (payload.size() % kPullEntryBytes != 0) return DataLoss("PULL payload of {} bytes", payload.size());
  std::vector<PullEntry> out(payload.size() / kPullEntryBytes);
  WireReader r(payload);
  for (PullEntry& e : out) {
    std::uint32_t pad = 0;
    if (!ReadRange(r, &e.range) || !r.U32(&e.generation) || !r.U32(&pad)) return DataLoss("short PULL");
  }
  return out;
}

OwnedFrame MakeFrame(FrameHeader header, std::vector<std::byte> payload) {
  header.payload_bytes = static_cast<std::uint32_t>(payload.size());
  header.payload_checksum = Checksum(ConstBytes(payload));
  return OwnedFrame{header, std::move(payload)};
}

void WireWriter::Raw(const void* p, std::size_t n) {
  const auto* b = static_cast<const std::byte*>(p);
  bytes_.insert(bytes_.end(), b, b + n);
}

bool WireReader::U8(std::uint8_t* v) { return Raw(v, 1); }

bool WireReader::Raw(void* p, std::size_t n) {
  if (remaining() < n) return false;
  std::memcpy(p, bytes_.data() + pos_, n);
  pos_ += n;
  return true;
}

}  // namespace smartgen::transfer
