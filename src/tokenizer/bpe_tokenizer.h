// Byte-level BPE with merge ranks (llama.cpp's llm_tokenizer_bpe).
//
// The text is split by the vocabulary's pre-tokenizer; each piece is mapped byte by byte to
// GPT-2's characters (byte_unicode.h), then the adjacent pair with the lowest merge rank is
// merged, repeatedly (ties: the leftmost pair). With ignore_merges (Llama 3) a piece that is
// itself a token is taken whole. A final symbol that is not a token falls back to its single
// bytes that are tokens (as llama.cpp does; with a complete byte alphabet nothing is lost).
//
// Thread-safety: a pure function of its arguments.
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/vocab.h"

namespace smartgen::tokenizer {

// Appends the tokens of `text` to `out`. `vocab.type` must be kBpe.
void BpeTokenize(const Vocab& vocab, const PreTokenizer& pre_tokenizer, std::string_view text,
                 std::vector<TokenId>* out);

}  // namespace smartgen::tokenizer
