#include "server/auth.h"

#include <cctype>

namespace smartgen::server {
namespace {

// Compares all of `a` against `b` whatever the first difference, so the time taken does not
// reveal how much of a guessed key was right.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

bool StartsWithBearer(std::string_view header) {
  constexpr std::string_view kScheme = "bearer ";
  if (header.size() < kScheme.size()) return false;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return false;
  }
  return true;
}

}  // namespace

Status CheckBearerToken(std::string_view authorization_header, std::string_view api_key) {
  if (api_key.empty()) return Status::Ok();
  if (authorization_header.empty()) {
    return PermissionDenied("missing API key: send it in an 'Authorization: Bearer <key>' header");
  }
  if (!StartsWithBearer(authorization_header)) {
    return PermissionDenied("the Authorization header must be 'Bearer <key>'");
  }
  std::string_view key = authorization_header.substr(7);
  while (!key.empty() && key.front() == ' ') key.remove_prefix(1);
  while (!key.empty() && key.back() == ' ') key.remove_suffix(1);
  if (!ConstantTimeEquals(key, api_key)) return PermissionDenied("incorrect API key provided");
  return Status::Ok();
}

}  // namespace smartgen::server
