#include "transfer/handshake.h"

#include <random>
#include <string>
#include <vector>

#include <xxhash.h>  // libxxhash: optimised even in debug builds

#include "core/clock.h"
#include "transfer/frame_io.h"

namespace smartgen::transfer {
namespace {

constexpr std::size_t kMaxHandshakePayload = 4096;

struct Hello {
  std::uint32_t version = 0;
  HandshakeParams params;
  std::uint64_t nonce = 0;
  std::uint64_t proof = 0;
};

std::vector<std::byte> EncodeHello(const Hello& h) {
  WireWriter w;
  w.U32(h.version);  // first, so that any future version can still read it
  w.U64(h.params.model_hash);
  w.U32(h.params.geometry.n_layers);
  w.U32(h.params.geometry.n_kv_heads);
  w.U32(h.params.geometry.head_dim);
  w.U32(h.params.geometry.block_tokens);
  w.U8(static_cast<std::uint8_t>(h.params.geometry.dtype));
  w.U8(static_cast<std::uint8_t>(h.params.layout));
  w.U64(h.nonce);
  w.U64(h.proof);
  return w.Take();
}

// Reads the version; the rest only when it is ours.
Result<Hello> DecodeHello(ConstBytes payload, std::uint32_t our_version) {
  WireReader r(payload);
  Hello h;
  if (!r.U32(&h.version)) return DataLoss("HELLO too short");
  if (h.version != our_version) return h;
  std::uint8_t dtype = 0, layout = 0;
  KvGeometry& g = h.params.geometry;
  if (!r.U64(&h.params.model_hash) || !r.U32(&g.n_layers) || !r.U32(&g.n_kv_heads) ||
      !r.U32(&g.head_dim) || !r.U32(&g.block_tokens) || !r.U8(&dtype) || !r.U8(&layout) ||
      !r.U64(&h.nonce) || !r.U64(&h.proof)) {
    return DataLoss("HELLO too short");
  }
  g.dtype = static_cast<KvDType>(dtype);
  h.params.layout = static_cast<KvLayout>(layout);
  return h;
}

std::uint64_t NewNonce() {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^
                                          static_cast<std::uint64_t>(core::NowNanos()));
  return rng();
}

std::uint64_t TokenProof(std::string_view token, std::uint64_t nonce, HandshakeRole prover) {
  std::string keyed(token);
  keyed.push_back(prover == HandshakeRole::kConnector ? 'C' : 'A');
  return XXH3_64bits_withSeed(keyed.data(), keyed.size(), nonce);
}

// Tells the peer why we refuse; best effort (the link may already be gone).
Status Refuse(Connection& connection, const Status& why, Deadline deadline) {
  FrameHeader h;
  h.type = FrameType::kRefuse;
  h.aux = static_cast<std::uint32_t>(why.code());
  const std::string_view text = why.message();
  std::vector<std::byte> payload(reinterpret_cast<const std::byte*>(text.data()),
                                 reinterpret_cast<const std::byte*>(text.data()) + text.size());
  SendOwnedFrame(connection, MakeFrame(h, std::move(payload)), deadline).IgnoreError();
  return why;
}

// Turns a REFUSE frame into the status the peer reported.
Status FromRefuse(const OwnedFrame& frame) {
  StatusCode code = StatusCode::kFailedPrecondition;
  if (frame.header.aux > 0 && frame.header.aux <= static_cast<std::uint32_t>(StatusCode::kInternal)) {
    code = static_cast<StatusCode>(frame.header.aux);
  }
  const std::string text(reinterpret_cast<const char*>(frame.payload.data()), frame.payload.size());
  return Status(code, "peer refused the connection: " + text);
}

Result<OwnedFrame> Expect(Connection& connection, FrameType type, Deadline deadline) {
  SG_ASSIGN_OR_RETURN(OwnedFrame frame,
                      ReceiveOwnedFrame(connection, deadline, kMaxHandshakePayload));
  if (frame.header.type == FrameType::kRefuse) return FromRefuse(frame);
  if (frame.header.type != type) {
    return FailedPrecondition("handshake: expected {}, got {} (not a smartgen peer?)",
                              FrameTypeName(type), FrameTypeName(frame.header.type));
  }
  return frame;
}

Status SendHello(Connection& connection, const Hello& hello, Deadline deadline) {
  FrameHeader h;
  h.type = FrameType::kHello;
  return SendOwnedFrame(connection, MakeFrame(h, EncodeHello(hello)), deadline);
}

}  // namespace

Status CheckCompatible(const HandshakeParams& local, std::uint32_t peer_version,
                       const HandshakeParams& peer) {
  if (peer_version != kProtocolVersion) {
    return FailedPrecondition("protocol version {} vs peer {}", kProtocolVersion, peer_version);
  }
  std::vector<std::string> diffs;
  auto diff = [&](std::string_view what, auto ours, auto theirs) {
    if (ours != theirs) diffs.push_back(fmt::format("{} {} vs peer {}", what, ours, theirs));
  };
  diff("model_hash", local.model_hash, peer.model_hash);
  diff("n_layers", local.geometry.n_layers, peer.geometry.n_layers);
  diff("n_kv_heads", local.geometry.n_kv_heads, peer.geometry.n_kv_heads);
  diff("head_dim", local.geometry.head_dim, peer.geometry.head_dim);
  diff("block_tokens", local.geometry.block_tokens, peer.geometry.block_tokens);
  if (local.geometry.dtype != peer.geometry.dtype) {
    diffs.push_back(fmt::format("kv dtype {} vs peer {}", DTypeName(local.geometry.dtype),
                                DTypeName(peer.geometry.dtype)));
  }
  diff("kv layout", static_cast<int>(local.layout), static_cast<int>(peer.layout));
  if (diffs.empty()) return Status::Ok();
  return FailedPrecondition("incompatible peer: {}", fmt::join(diffs, ", "));
}

Status RunHandshake(Connection& connection, HandshakeRole role, const HandshakeParams& params,
                    std::string_view token, Deadline deadline, std::uint32_t version) {
  // Versions are compared here, against `version`, so tests can play an old peer.
  auto check = [&](const Hello& peer) -> Status {
    if (peer.version != version) {
      return FailedPrecondition("protocol version {} vs peer {}", version, peer.version);
    }
    return CheckCompatible(params, kProtocolVersion, peer.params);
  };
  Hello mine{version, params, NewNonce(), 0};

  if (role == HandshakeRole::kConnector) {
    SG_RETURN_IF_ERROR(SendHello(connection, mine, deadline));
    SG_ASSIGN_OR_RETURN(OwnedFrame frame, Expect(connection, FrameType::kHello, deadline));
    SG_ASSIGN_OR_RETURN(Hello peer, DecodeHello(frame.payload, version));
    if (Status s = check(peer); !s.ok()) return Refuse(connection, s, deadline);
    if (peer.proof != TokenProof(token, mine.nonce, HandshakeRole::kAcceptor)) {
      return Refuse(connection, PermissionDenied("wrong token: the acceptor's proof does not match the shared token"), deadline);
    }
    FrameHeader h;
    h.type = FrameType::kAuth;
    WireWriter w;
    w.U64(TokenProof(token, peer.nonce, HandshakeRole::kConnector));
    SG_RETURN_IF_ERROR(SendOwnedFrame(connection, MakeFrame(h, w.Take()), deadline));
    return Expect(connection, FrameType::kWelcome, deadline).status();
  }

  SG_ASSIGN_OR_RETURN(OwnedFrame frame, Expect(connection, FrameType::kHello, deadline));
  SG_ASSIGN_OR_RETURN(Hello peer, DecodeHello(frame.payload, version));
  if (Status s = check(peer); !s.ok()) return Refuse(connection, s, deadline);
  mine.proof = TokenProof(token, peer.nonce, HandshakeRole::kAcceptor);
  SG_RETURN_IF_ERROR(SendHello(connection, mine, deadline));
  SG_ASSIGN_OR_RETURN(OwnedFrame auth, Expect(connection, FrameType::kAuth, deadline));
  WireReader r(auth.payload);
  std::uint64_t proof = 0;
  if (!r.U64(&proof) || proof != TokenProof(token, mine.nonce, HandshakeRole::kConnector)) {
    return Refuse(connection, PermissionDenied("wrong token: the peer's proof does not match the shared token"), deadline);
  }
  FrameHeader welcome;
  welcome.type = FrameType::kWelcome;
  return SendOwnedFrame(connection, MakeFrame(welcome), deadline);
}

}  // namespace smartgen::transfer
