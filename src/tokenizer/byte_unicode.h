// GPT-2's reversible byte <-> Unicode mapping used by byte-level BPE vocabularies.
//
// Printable bytes ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF) map to the code point of the same
// value; the other 68 bytes map, in byte order, to U+0100, U+0101, ... So the space 0x20 is
// "Ġ" (U+0120) and the newline 0x0A is "Ċ" (U+010A). Every function is thread-safe (the tables
// are immutable after first use).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace smartgen::tokenizer {

// The UTF-8 text of the code point that byte `b` maps to.
std::string_view ByteToUnicode(std::uint8_t b);

// The byte that maps to code point `cp`, or -1 when no byte does.
int UnicodeToByte(std::uint32_t cp);

// Appends ByteToUnicode(b) for every byte of `bytes` (any bytes, not only valid UTF-8).
void ByteEncode(std::string_view bytes, std::string* out);

// The bytes behind a byte-level token's text (llama.cpp's llama_decode_text). A code point
// outside the mapping becomes "[UNK_BYTE_0x<utf8 hex><text>]" as in llama.cpp, so nothing
// is silently dropped; an invalid UTF-8 byte is treated the same way.
std::string ByteDecode(std::string_view text);

}  // namespace smartgen::tokenizer
