// Authentication of the control plane (router -> node HTTP calls on /internal/*): every call
// carries an HMAC-SHA256, keyed by the node token, over its method, path, body digest, a
// timestamp and a random nonce. A node refuses (401) a call whose signature does not match,
// whose timestamp is more than the replay window away from its clock, or whose nonce it has
// already seen within the window (a replayed call). The KV link authenticates its peer by the
// same token in its handshake (transfer/handshake.h). Neither encrypts: KV and prompts cross
// the network in the clear unless the network itself is private (docs/ARCHITECTURE.md).
//
//   X-Smartgen-Time:      milliseconds since the Unix epoch
//   X-Smartgen-Nonce:     32 hex digits
//   X-Smartgen-Signature: hex HMAC-SHA256(token, method \n path \n hex sha256(body) \n time \n nonce)
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

// Milliseconds since the Unix epoch (wall clock: both sides must agree within the window).
std::int64_t WallMillis();
// Hex HMAC-SHA256 of the canonical string above.
std::string Signature(std::string_view token, std::string_view method, std::string_view path,
                      std::string_view body, std::int64_t time_ms, std::string_view nonce);
// The three headers for one call (a fresh nonce each time).
httplib::Headers SignHeaders(std::string_view token, std::string_view method, std::string_view path,
                             std::string_view body);

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
