// SentencePiece-style BPE over token scores (llama.cpp's llm_tokenizer_spm).
//
// The text is split into UTF-8 characters; then the adjacent pair whose concatenation is a
// token with the highest score is merged, repeatedly (ties: the leftmost pair). A final symbol
// that is not a token falls back to one "<0xNN>" token per byte (else the unknown token).
// Whitespace escaping ("▁") and the dummy prefix are the caller's job (Tokenizer::Encode).
//
// Thread-safety: a pure function of its arguments.
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace smartgen::tokenizer {

// Appends the tokens of `text` to `out`. `vocab.type` must be kSpm.
void SpmTokenize(const Vocab& vocab, std::string_view text, std::vector<TokenId>* out);

}  // namespace smartgen::tokenizer
