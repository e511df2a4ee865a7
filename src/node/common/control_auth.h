// Authentication of the control plane (router -> node HTTP calls on /internal/*): every call
// carries an HMAC-SHA256, keyed by the node token, over its method, path, body digest, a
// timestamp, a random nonce and the caller's name. A node refuses (401) a call whose signature does not match,
// whose timestamp is more than the replay window away from its clock, or whose nonce it has
// already seen within the window (a replayed call). The KV link authenticates its peer by the
// same token in its handshake (transfer/handshake.h). Neither encrypts: KV and prompts cross
// the network in the clear unless the network itself is private (docs/ARCHITECTURE.md).
//
//   X-Smartgen-Time:      milliseconds since the Unix epoch
//   X-Smartgen-Nonce:     32 hex digits
//   X-Smartgen-Caller:    the caller's name (a router's --name; may be absent = "")
//   X-Smartgen-Signature: hex HMAC-SHA256(token, method \n path \n hex sha256(body) \n time \n nonce
//                                        \n caller)
//
// The caller's identity (CallerOf) is the name it signed, and, when the call came over mutual
// TLS (control_tls.h), the common name of its verified certificate as well: nodes bind each
// request to the identity that registered it, and refuse (403) cancels from any other. Every
// holder of the token can sign any name; only distinct certificates per router make the
// identity a cryptographic one.
//
// Thread-safety: SignHeaders is a pure function; RequestVerifier is thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include <httplib.h>

#include "core/status.h"

namespace smartgen::node {

inline constexpr const char* kAuthTimeHeader = "X-Smartgen-Time";
inline constexpr const char* kAuthNonceHeader = "X-Smartgen-Nonce";
inline constexpr const char* kAuthSignatureHeader = "X-Smartgen-Signature";
inline constexpr const char* kAuthCallerHeader = "X-Smartgen-Caller";
inline constexpr std::size_t kMaxCallerBytes = 128;

// Milliseconds since the Unix epoch (wall clock: both sides must agree within the window).
std::int64_t WallMillis();
// Hex HMAC-SHA256 of the canonical string above.
std::string Signature(std::string_view token, std::string_view method, std::string_view path,
                      std::string_view body, std::int64_t time_ms, std::string_view nonce,
                      std::string_view caller = {});
// The headers for one call (a fresh nonce each time); the caller header when `caller` is set.
httplib::Headers SignHeaders(std::string_view token, std::string_view method, std::string_view path,
                             std::string_view body, std::string_view caller = {});
// Who made a call Verify accepted: "name" (the signed caller header), "cn=CN name" when it came
// with a verified TLS client certificate.
std::string CallerOf(const httplib::Request& req);

class RequestVerifier {
 public:
  explicit RequestVerifier(std::string token, std::int64_t window_ms = 30000)
      : token_(std::move(token)), window_ms_(window_ms) {}
  // OK, or kPermissionDenied saying why (missing, stale, replayed, wrong signature).
  Status Verify(const httplib::Request& req);

 private:
  const std::string token_;
  const std::int64_t window_ms_;
  std::mutex mu_;
  std::map<std::string, std::int64_t> seen_;  // nonce -> when it may be forgotten (ms)
};

}  // namespace smartgen::node
