// libFuzzer target: the transfer frame decoders. The first byte picks the mode:
//   even: the next 64 bytes are a raw frame header (checksum and all);
//   odd:  the next 60 bytes are sealed here with their valid header checksum first, so that
//         the fuzzer gets past the checksum to the type, length and range checks.
// The rest is a payload decoded as an ack list and as a pull list. Beyond "no crash": a header
// that decodes re-encodes to the same bytes; a payload list that decodes re-encodes to as many
// bytes, which decode to the same list (padding bytes are not kept).
#include <xxhash.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "transfer/frame.h"

namespace t = smartgen::transfer;

namespace {

// Encode(list) has payload's size and is a fixed point of Decode then Encode.
template <typename List, typename Encode, typename Decode>
bool RoundTrips(const List& list, t::ConstBytes payload, Encode encode, Decode decode) {
  const std::vector<std::byte> once = encode(list);
  if (once.size() != payload.size()) return false;
  auto again = decode(t::ConstBytes(once));
  if (!again.ok()) return false;
  const std::vector<std::byte> twice = encode(*again);
  return twice == once;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool seal = (data[0] & 1) != 0;
  data += 1;
  size -= 1;
  const std::size_t head_bytes = seal ? 60 : t::kFrameHeaderBytes;
  if (size < head_bytes) return 0;
  std::array<std::uint8_t, t::kFrameHeaderBytes> head{};
  std::memcpy(head.data(), data, head_bytes);
  if (seal) {
    const auto sum = static_cast<std::uint32_t>(XXH3_64bits(head.data(), 60));
    std::memcpy(head.data() + 60, &sum, 4);
  }
  std::span<const std::byte, t::kFrameHeaderBytes> view(
      reinterpret_cast<const std::byte*>(head.data()), t::kFrameHeaderBytes);
  if (auto header = t::DecodeHeader(view); header.ok()) {
    const t::EncodedHeader again = t::EncodeHeader(*header);
    if (std::memcmp(again.data(), head.data(), t::kFrameHeaderBytes) != 0) __builtin_trap();
  }
  const t::ConstBytes payload(reinterpret_cast<const std::byte*>(data + head_bytes),
                              size - head_bytes);
  if (auto acks = t::DecodeAcks(payload); acks.ok()) {
    if (!RoundTrips(*acks, payload, [](const auto& l) { return t::EncodeAcks(l); },
                    [](t::ConstBytes b) { return t::DecodeAcks(b); })) {
      __builtin_trap();
    }
  }
  if (auto pulls = t::DecodePulls(payload); pulls.ok()) {
    if (!RoundTrips(*pulls, payload, [](const auto& l) { return t::EncodePulls(l); },
                    [](t::ConstBytes b) { return t::DecodePulls(b); })) {
      __builtin_trap();
    }
  }
  return 0;
}
