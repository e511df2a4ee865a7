// UTF-8 helpers shared by the tokenizers. All functions are total: malformed input never
// reads out of bounds; how each one treats it is stated below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace smartgen::tokenizer {

// Length of the UTF-8 sequence announced by `lead` judged by its high nibble only
// (llama.cpp's unicode_len_utf8): 1 for ASCII and stray continuation bytes, 2, 3 or 4.
// Callers clamp it to the bytes left.
std::size_t Utf8SequenceLength(unsigned char lead);

// Appends the UTF-8 encoding of `cp` (cp <= 0x10FFFF; larger values append U+FFFD).
void AppendUtf8(std::uint32_t cp, std::string* out);

// Decodes one code point at `*pos` and advances `*pos` past it. Returns false (advancing by
// one byte) when the bytes there are not a well-formed, shortest-form UTF-8 sequence.
bool DecodeUtf8(std::string_view text, std::size_t* pos, std::uint32_t* cp);

// Whether `text` is entirely well-formed UTF-8.
bool IsValidUtf8(std::string_view text);

}  // namespace smartgen::tokenizer
