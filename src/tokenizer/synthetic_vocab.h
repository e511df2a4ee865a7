// A synthetic byte-level vocabulary for models made by `smartgen make-model`.
//
// Layout (a `gpt2` vocabulary, pre-tokenizer `smollm`, no merges):
//   ids 0..255    one token per byte value b: GPT-2's character for b (byte_unicode.h), NORMAL,
//                 so token id == byte value and every text round-trips byte for byte;
//   256           <|endoftext|>  CONTROL  (BOS and padding)
//   257           <|im_start|>   CONTROL
//   258           <|im_end|>     CONTROL  (EOS; with <|endoftext|> an end-of-generation token)
//   259..n_vocab-1 <|pad_0|>, <|pad_1|>, ...  UNUSED (decode to nothing, never parsed)
// add_bos_token = add_eos_token = false; tokenizer.chat_template is a ChatML Jinja template,
// so Tokenizer::ApplyChatTemplate picks ChatML.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "gguf/gguf_writer.h"

namespace smartgen::tokenizer {

inline constexpr std::int32_t kSyntheticEndOfText = 256;
inline constexpr std::int32_t kSyntheticImStart = 257;
inline constexpr std::int32_t kSyntheticImEnd = 258;
inline constexpr std::int32_t kSyntheticMinVocab = 259;

// Adds the tokenizer.* keys of an `n_vocab`-token synthetic vocabulary to `writer`.
// kInvalidArgument when n_vocab < kSyntheticMinVocab (or absurdly large, > 2^24).
Status WriteSyntheticByteVocab(gguf::GgufWriter& writer, std::int32_t n_vocab);

}  // namespace smartgen::tokenizer
