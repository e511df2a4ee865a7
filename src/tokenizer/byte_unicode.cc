#include "tokenizer/byte_unicode.h"

#include <fmt/format.h>

#include <array>

#include "tokenizer/utf8.h"

namespace smartgen::tokenizer {
namespace {

struct Tables {
  std::array<std::string, 256> byte_to_utf8;
  std::array<std::uint32_t, 256> byte_to_cp{};
  std::array<std::int16_t, 512> cp_to_byte{};  // every mapped code point is below 0x144

  Tables() {
    cp_to_byte.fill(-1);
    std::array<bool, 256> printable{};
    for (int b = 0x21; b <= 0x7E; ++b) printable[b] = true;
    for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
    for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
    std::uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const std::uint32_t cp = printable[b] ? static_cast<std::uint32_t>(b) : next++;
      byte_to_cp[b] = cp;
      cp_to_byte[cp] = static_cast<std::int16_t>(b);
      AppendUtf8(cp, &byte_to_utf8[b]);
    }
  }
};

const Tables& GetTables() {
  static const Tables tables;
  return tables;
}

}  // namespace

std::string_view ByteToUnicode(std::uint8_t b) {
  return GetTables().byte_to_utf8[b];
}

int UnicodeToByte(std::uint32_t cp) {
  const Tables& t = GetTables();
  return cp < t.cp_to_byte.size() ? t.cp_to_byte[cp] : -1;
}

void ByteEncode(std::string_view bytes, std::string* out) {
  const Tables& t = GetTables();
  for (char c : bytes) out->append(t.byte_to_utf8[static_cast<unsigned char>(c)]);
}

std::string ByteDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t start = pos;
    std::uint32_t cp = 0;
    const bool ok = DecodeUtf8(text, &pos, &cp);
    const int b = ok ? UnicodeToByte(cp) : -1;
    if (b >= 0) {
      out.push_back(static_cast<char>(b));
      continue;
    }
    out.append("[UNK_BYTE_0x");
    for (std::size_t k = start; k < pos; ++k) {
      out.append(fmt::format("{:02x}", static_cast<unsigned char>(text[k])));
    }
    out.append(text);
    out.push_back(']');
  }
  return out;
}

}  // namespace smartgen::tokenizer
