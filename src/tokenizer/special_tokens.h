// SpecialTokenSplitter: splits text on the texts of special tokens before tokenization, as
// llama.cpp's tokenizer_st_partition does.
//
// Candidates are CONTROL, USER_DEFINED and UNKNOWN tokens; with parse_special = false only
// USER_DEFINED ones (Hugging Face splits added tokens out always). Tokens are applied longest
// text first (ties by id): each one splits every remaining text fragment at all its
// non-overlapping occurrences, left to right. LSTRIP / RSTRIP tokens also drop the whitespace
// next to them. Only the tokens that occur in the text are tried, so a vocabulary with tens of
// thousands of special tokens costs no more than one with ten.
//
// Thread-safety: immutable after construction; Split() may run concurrently.
#pragma once

#include <bitset>
#include <cstddef>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/vocab.h"

namespace smartgen::tokenizer {

// A piece of the input: either a special token or a run of text to tokenize normally.
struct Fragment {
  TokenId token = kNoToken;  // kNoToken for text
  std::size_t offset = 0;    // text: byte range in the input
  std::size_t length = 0;

  bool is_token() const { return token != kNoToken; }
};

class SpecialTokenSplitter {
 public:
  // `vocab` must outlive the splitter.
  explicit SpecialTokenSplitter(const Vocab& vocab);

  // The fragments of `text`, in order. Empty text gives no fragments.
  std::vector<Fragment> Split(std::string_view text, bool parse_special) const;

 private:
  const Vocab* vocab_;
  std::unordered_map<std::string_view, TokenId> by_text_;  // views into vocab_->tokens
  std::vector<std::size_t> lengths_;                       // distinct text lengths
  std::bitset<256> first_bytes_;
  std::vector<std::size_t> order_;  // by token id: position in vocab_->special_tokens
};

}  // namespace smartgen::tokenizer
