// libFuzzer target: the transfer handshake against a peer that sends arbitrary bytes. A
// scripted Connection serves the peer's byte stream (headers and payloads, in the order the
// handshake asks for them) and swallows what we send. First byte: bit 0 picks our role
// (connector or acceptor); bit 1 the form of the rest:
//   0: the peer's raw byte stream;
//   1: frames [u8 type][u32 aux][u16 n][n payload bytes], sealed here into valid frames
//      (checksums filled in), so that the fuzzer explores the handshake's logic rather than
//      the checksums (frame_fuzz covers those).
// The handshake must end with an error, never crash, hang or read past what arrived; and a
// peer cannot prove the token for our fresh nonce in advance, so it must never succeed.
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <span>
#include <string>

#include <vector>

#include "transfer/frame.h"
#include "transfer/handshake.h"
#include "transfer/transport.h"

namespace t = smartgen::transfer;

namespace {

class ScriptedPeer final : public t::Connection {
 public:
  ScriptedPeer(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  smartgen::Status Send(std::span<const std::byte, t::kFrameHeaderBytes>,
                        std::span<const t::ConstBytes>, t::Deadline,
                        std::shared_ptr<const void>) override {
    return smartgen::Status::Ok();
  }
  smartgen::Status ReceiveHeader(std::span<std::byte, t::kFrameHeaderBytes> header,
                                 t::Deadline) override {
    return Take(header.data(), header.size());
  }
  smartgen::Status ReceivePayload(std::span<const t::MutableBytes> parts, t::Deadline) override {
    for (const t::MutableBytes& p : parts) SG_RETURN_IF_ERROR(Take(p.data(), p.size()));
    return smartgen::Status::Ok();
  }
  void Shutdown() override {}
  std::string Describe() const override { return "fuzz peer"; }

 private:
  smartgen::Status Take(std::byte* out, std::size_t n) {
    if (size_ - pos_ < n) return smartgen::Unavailable("the peer closed the connection");
    if (n > 0) std::memcpy(out, data_ + pos_, n);
    pos_ += n;
    return smartgen::Status::Ok();
  }
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// The framed form's frames, sealed, as one byte stream.
std::vector<std::uint8_t> Seal(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> out;
  std::size_t pos = 0;
  while (size - pos >= 7) {
    t::FrameHeader h;
    h.type = static_cast<t::FrameType>(data[pos]);
    std::memcpy(&h.aux, data + pos + 1, 4);
    std::uint16_t n;
    std::memcpy(&n, data + pos + 5, 2);
    pos += 7;
    n = static_cast<std::uint16_t>(std::min<std::size_t>(n, size - pos));
    std::vector<std::byte> payload(reinterpret_cast<const std::byte*>(data + pos),
                                   reinterpret_cast<const std::byte*>(data + pos + n));
    pos += n;
    const t::OwnedFrame f = t::MakeFrame(h, std::move(payload));
    const t::EncodedHeader head = t::EncodeHeader(f.header);
    const auto* hb = reinterpret_cast<const std::uint8_t*>(head.data());
    out.insert(out.end(), hb, hb + head.size());
    const auto* pb = reinterpret_cast<const std::uint8_t*>(f.payload.data());
    out.insert(out.end(), pb, pb + f.payload.size());
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const auto role = (data[0] & 1) ? t::HandshakeRole::kAcceptor : t::HandshakeRole::kConnector;
  std::vector<std::uint8_t> sealed;
  if (data[0] & 2) sealed = Seal(data + 1, size - 1);
  ScriptedPeer peer((data[0] & 2) ? sealed.data() : data + 1,
                    (data[0] & 2) ? sealed.size() : size - 1);
  t::HandshakeParams params;
  params.model_hash = 0x1234;
  params.geometry.n_layers = 2;
  params.geometry.n_kv_heads = 1;
  params.geometry.head_dim = 8;
  params.geometry.block_tokens = 16;
  const smartgen::Status st = t::RunHandshake(peer, role, params, "fuzz-token",
                                              t::Deadline::After(smartgen::core::Seconds(1)));
  // Our nonce is fresh per run: bytes written in advance cannot hold a valid proof of it.
  if (st.ok()) __builtin_trap();
  return 0;
}
