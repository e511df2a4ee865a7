#include "tokenizer/special_tokens.h"

#include <algorithm>
#include <cctype>

namespace smartgen::tokenizer {
namespace {

bool IsSpace(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0;
}

bool Eligible(const TokenData& token, bool parse_special) {
  return parse_special || (token.attrs & (token_attr::kControl | token_attr::kUnknown)) == 0;
}

// Splits every text fragment of `in` at the occurrences of `token` (llama.cpp semantics).
void SplitOnToken(std::string_view text, TokenId token, const TokenData& data,
                  const std::vector<Fragment>& in, std::vector<Fragment>* out) {
  const std::string_view needle = data.text;
  for (const Fragment& fragment : in) {
    if (fragment.is_token()) {
      out->push_back(fragment);
      continue;
    }
    std::size_t pos = fragment.offset;
    const std::size_t end = fragment.offset + fragment.length;
    while (pos < end) {
      const std::size_t match = text.find(needle, pos);
      if (match == std::string_view::npos || match + needle.size() > end) break;
      std::size_t left_length = match - pos;
      if (data.attrs & token_attr::kLstrip) {
        while (left_length > 0 && IsSpace(text[pos + left_length - 1])) --left_length;
      }
      if (left_length > 0) out->push_back({kNoToken, pos, left_length});
      out->push_back({token, 0, 0});
      pos = match + needle.size();
      if (data.attrs & token_attr::kRstrip) {
        while (pos < end && IsSpace(text[pos])) ++pos;
      }
    }
    if (pos < end) out->push_back({kNoToken, pos, end - pos});
  }
}

}  // namespace

SpecialTokenSplitter::SpecialTokenSplitter(const Vocab& vocab)
    : vocab_(&vocab), order_(vocab.tokens.size(), 0) {
  for (std::size_t i = 0; i < vocab.special_tokens.size(); ++i) {
    const TokenId id = vocab.special_tokens[i];
    const std::string_view text = vocab.tokens[id].text;
    by_text_.emplace(text, id);
    lengths_.push_back(text.size());
    first_bytes_.set(static_cast<unsigned char>(text[0]));
    order_[id] = i;
  }
  std::sort(lengths_.begin(), lengths_.end());
  lengths_.erase(std::unique(lengths_.begin(), lengths_.end()), lengths_.end());
}

std::vector<Fragment> SpecialTokenSplitter::Split(std::string_view text, bool parse_special) const {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({kNoToken, 0, text.size()});

  // Which special tokens occur at all (by their position in the priority order).
  std::vector<std::size_t> present;
  for (std::size_t pos = 0; pos < text.size(); ++pos) {
    if (!first_bytes_.test(static_cast<unsigned char>(text[pos]))) continue;
    for (std::size_t length : lengths_) {
      if (length > text.size() - pos) break;
      const auto it = by_text_.find(text.substr(pos, length));
      if (it == by_text_.end()) continue;
      if (Eligible(vocab_->tokens[it->second], parse_special))
        present.push_back(order_[it->second]);
    }
  }
  if (present.empty()) return fragments;
  std::sort(present.begin(), present.end());
  present.erase(std::unique(present.begin(), present.end()), present.end());

  std::vector<Fragment> next;
  for (std::size_t rank : present) {
    const TokenId id = vocab_->special_tokens[rank];
    next.clear();
    SplitOnToken(text, id, vocab_->tokens[id], fragments, &next);
    fragments.swap(next);
  }
  return fragments;
}

}  // namespace smartgen::tokenizer
