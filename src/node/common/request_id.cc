#include "node/common/request_id.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <cstring>

namespace smartgen::node {

Id128 Id128::Random() {
  Id128 id;
  while (!id.valid()) {
    unsigned char bytes[16];
    if (RAND_bytes(bytes, sizeof bytes) != 1) std::abort();  // no entropy: nothing is safe to name
    std::memcpy(&id.hi, bytes, 8);
    std::memcpy(&id.lo, bytes + 8, 8);
  }
  return id;
}

std::string Id128::ToHex() const {
  return fmt::format("{:016x}{:016x}", hi, lo);
}

Result<Id128> ParseId128(std::string_view hex, const char* what) {
  if (hex.size() != 32)
    return InvalidArgument("{}: expected 32 hex digits, got {} characters", what, hex.size());
  Id128 id;
  for (std::size_t i = 0; i < 32; ++i) {
    const char c = hex[i];
    int v;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      v = c - 'A' + 10;
    } else {
      return InvalidArgument("{}: '{}' is not a hex digit", what, c);
    }
    std::uint64_t& half = i < 16 ? id.hi : id.lo;
    half = half << 4 | static_cast<std::uint64_t>(v);
  }
  if (!id.valid()) return InvalidArgument("{}: the low 64 bits must not be zero", what);
  return id;
}

bool SecretEquals(const Id128& a, const Id128& b) {
  return CRYPTO_memcmp(&a, &b, sizeof(Id128)) == 0;
}

}  // namespace smartgen::node
