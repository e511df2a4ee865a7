// The versioned handshake that opens every connection. Both sides must agree on the protocol
// version, the model (hash), the KV geometry (layers, KV heads, head_dim, block size, dtype) and
// layout, and must know the same shared-secret token; otherwise the connection is refused with
// an error that names the mismatch, on both sides.
//
//   connector -> acceptor  HELLO  {version, params, nonce_c}
//   acceptor  -> connector HELLO  {version, params, nonce_a, proof(token, nonce_c)} | REFUSE
//   connector -> acceptor  AUTH   {proof(token, nonce_a)}                         | REFUSE
//   acceptor  -> connector WELCOME                                                | REFUSE
//
// The token never crosses the link: each side proves it with a keyed xxh3 of the peer's fresh
// nonce. That stops misrouted and unauthorised clients; it is not a cryptographic MAC, so an
// untrusted network still needs a secure tunnel.
//
// Errors: kFailedPrecondition = incompatible version, model or geometry; kPermissionDenied =
// wrong token; kUnavailable / kDeadlineExceeded = the link failed or the peer was too slow.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "transfer/transport.h"
#include "transfer/types.h"

namespace smartgen::transfer {

inline constexpr std::uint32_t kProtocolVersion = 1;

// What both endpoints of a connection must agree on.
struct HandshakeParams {
  std::uint64_t model_hash = 0;  // identifies the model weights and config (node layer decides)
  KvGeometry geometry;
  KvLayout layout = KvLayout::kKThenV;
  friend bool operator==(const HandshakeParams&, const HandshakeParams&) = default;
};

// OK when a peer speaking `peer_version` with `peer` params can talk to us; otherwise
// kFailedPrecondition naming every field that differs ("block_tokens 16 vs peer 32, ...").
Status CheckCompatible(const HandshakeParams& local, std::uint32_t peer_version,
                       const HandshakeParams& peer);

enum class HandshakeRole : std::uint8_t { kConnector = 0, kAcceptor = 1 };

// Runs the handshake over a fresh connection as `role`. On success the connection carries
// protocol frames; on failure the peer has been told why (when the link still works) and the
// caller drops the connection. `version` is kProtocolVersion except in tests.
Status RunHandshake(Connection& connection, HandshakeRole role, const HandshakeParams& params,
                    std::string_view token, Deadline deadline,
                    std::uint32_t version = kProtocolVersion);

}  // namespace smartgen::transfer
