#include "tokenizer/utf8.h"

namespace smartgen::tokenizer {

std::size_t Utf8SequenceLength(unsigned char lead) {
  static constexpr std::size_t kByHighNibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kByHighNibble[lead >> 4];
}

void AppendUtf8(std::uint32_t cp, std::string* out) {
  if (cp <= 0x7F) {
    out->push_back(static_cast<char>(cp));
  } else if (cp <= 0x7FF) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp <= 0xFFFF) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp <= 0x10FFFF) {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->append("\xEF\xBF\xBD");
  }
}

bool DecodeUtf8(std::string_view text, std::size_t* pos, std::uint32_t* cp) {
  const std::size_t i = *pos;
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char b0 = byte(0);
  std::size_t n = 0;
  std::uint32_t value = 0;
  std::uint32_t min_value = 0;
  if (b0 < 0x80) {
    *cp = b0;
    *pos = i + 1;
    return true;
  } else if ((b0 & 0xE0) == 0xC0) {
    n = 2, value = b0 & 0x1F, min_value = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3, value = b0 & 0x0F, min_value = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 4, value = b0 & 0x07, min_value = 0x10000;
  } else {
    *pos = i + 1;
    return false;
  }
  if (i + n > text.size()) {
    *pos = i + 1;
    return false;
  }
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(k) & 0xC0) != 0x80) {
      *pos = i + 1;
      return false;
    }
    value = (value << 6) | (byte(k) & 0x3F);
  }
  if (value < min_value || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
    *pos = i + 1;
    return false;
  }
  *cp = value;
  *pos = i + n;
  return true;
}

bool IsValidUtf8(std::string_view text) {
  std::size_t pos = 0;
  std::uint32_t cp = 0;
  while (pos < text.size()) {
    if (!DecodeUtf8(text, &pos, &cp)) return false;
  }
  return true;
}

}  // namespace smartgen::tokenizer
