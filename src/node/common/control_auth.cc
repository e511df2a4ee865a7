#include "node/common/control_auth.h"

#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>

#include <fmt/format.h>

namespace smartgen::node {
namespace {

std::string Hex(const unsigned char* p, std::size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[p[i] >> 4];
    out[2 * i + 1] = kDigits[p[i] & 15];
  }
  return out;
}

// Equal strings, in time that does not depend on where they differ.
bool SameSecret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

std::int64_t WallMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Signature(std::string_view token, std::string_view method, std::string_view path,
                      std::string_view body, std::int64_t time_ms, std::string_view nonce,
                      std::string_view caller) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(body.data()), body.size(), digest);
  const std::string canonical =
      fmt::format("{}\n{}\n{}\n{}\n{}\n{}", method, path, Hex(digest, sizeof(digest)), time_ms, nonce, caller);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()),
       reinterpret_cast<const unsigned char*>(canonical.data()), canonical.size(), mac, &mac_len);
  return Hex(mac, mac_len);
}

httplib::Headers SignHeaders(std::string_view token, std::string_view method, std::string_view path,
                             std::string_view body, std::string_view caller) {
  unsigned char raw[16];
  if (RAND_bytes(raw, sizeof(raw)) != 1) {
    // No entropy (should not happen): a time-derived nonce still differs per call.
    const std::int64_t t = std::chrono::steady_clock::now().time_since_epoch().count();
    for (std::size_t i = 0; i < sizeof(raw); ++i) raw[i] = static_cast<unsigned char>(t >> (8 * (i % 8)));
  }
  const std::string nonce = Hex(raw, sizeof(raw));
  const std::int64_t now = WallMillis();
  httplib::Headers h = {{kAuthTimeHeader, std::to_string(now)},
                        {kAuthNonceHeader, nonce},
                        {kAuthSignatureHeader, Signature(token, method, path, body, now, nonce, caller)}};
  if (!caller.empty()) h.emplace(kAuthCallerHeader, std::string(caller));
  return h;
}

std::string CallerOf(const httplib::Request& req) {
  std::string name = req.get_header_value(kAuthCallerHeader);
  if (req.ssl == nullptr) return name;
  X509* cert = SSL_get_peer_certificate(const_cast<SSL*>(req.ssl));
  if (cert == nullptr) return name;
  char cn[256] = {0};
  const int n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof(cn));
  X509_free(cert);
  return fmt::format("cn={} {}", n > 0 ? std::string_view(cn, n) : std::string_view(), name);
}

Status RequestVerifier::Verify(const httplib::Request& req) {
  const std::string time_text = req.get_header_value(kAuthTimeHeader);
  const std::string nonce = req.get_header_value(kAuthNonceHeader);
  const std::string signature = req.get_header_value(kAuthSignatureHeader);
  if (time_text.empty() || nonce.empty() || signature.empty()) {
    return PermissionDenied("{} {}: no control-plane signature", req.method, req.path);
  }
  std::int64_t time_ms = 0;
  try {
    std::size_t used = 0;
    time_ms = std::stoll(time_text, &used);
    if (used != time_text.size()) return PermissionDenied("malformed {}", kAuthTimeHeader);
  } catch (const std::exception&) {
    return PermissionDenied("malformed {}", kAuthTimeHeader);
  }
  if (nonce.size() > 64) return PermissionDenied("malformed {}", kAuthNonceHeader);
  const std::string caller = req.get_header_value(kAuthCallerHeader);
  if (caller.size() > kMaxCallerBytes ||
      std::any_of(caller.begin(), caller.end(), [](char c) { return c < 0x21 || c > 0x7e; })) {
    return PermissionDenied("malformed {}", kAuthCallerHeader);
  }
  const std::int64_t now = WallMillis();
  if (time_ms < now - window_ms_ || time_ms > now + window_ms_) {
    return PermissionDenied("{} {}: timestamp {} ms away from this node's clock", req.method, req.path,
                            time_ms - now);
  }
  if (!SameSecret(signature, Signature(token_, req.method, req.path, req.body, time_ms, nonce, caller))) {
    return PermissionDenied("{} {}: wrong signature (token mismatch?)", req.method, req.path);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = seen_.begin(); it != seen_.end();) it = it->second < now ? seen_.erase(it) : std::next(it);
  if (!seen_.emplace(nonce, time_ms + 2 * window_ms_).second) {
    return PermissionDenied("{} {}: replayed call (nonce seen before)", req.method, req.path);
  }
  return Status::Ok();
}

}  // namespace smartgen::node
