#include "tokenizer/tokenizer.h"

#include <utility>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/spm_tokenizer.h"

namespace smartgen::tokenizer {
namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // "▁" U+2581

void ReplaceAll(std::string* s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s->size());
  std::size_t pos = 0;
  while (true) {
    const std::size_t hit = s->find(from, pos);
    if (hit == std::string::npos) break;
    out.append(*s, pos, hit - pos);
    out.append(to);
    pos = hit + from.size();
  }
  out.append(*s, pos, std::string::npos);
  s->swap(out);
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte of an SPM byte token "<0xNN>" (as strtol on the two characters after "<0x").
char SpmByte(std::string_view text) {
  int value = 0;
  for (std::size_t i = 3; i < 5 && i < text.size(); ++i) {
    const int digit = HexDigit(text[i]);
    if (digit < 0) break;
    value = value * 16 + digit;
  }
  return static_cast<char>(value);
}

// llama_token_to_piece(special = true) for every token.
std::string PieceOf(const Vocab& vocab, const TokenData& token) {
  constexpr std::uint32_t kVerbatim =
      token_attr::kUnknown | token_attr::kControl | token_attr::kUserDefined;
  if (token.attrs & kVerbatim) return token.text;
  if (vocab.type == VocabType::kSpm) {
    if (token.attrs & token_attr::kNormal) {
      std::string piece = token.text;
      ReplaceAll(&piece, kSpmSpace, " ");
      return piece;
    }
    if (token.attrs & token_attr::kByte) return std::string(1, SpmByte(token.text));
    return {};
  }
  if (token.attrs & token_attr::kNormal) return ByteDecode(token.text);
  return {};
}

// llama.cpp's clean_up_tokenization_spaces, three in-place passes kept index for index so
// corner cases (" ' " followed by more quotes, ...) come out the same.
void CleanSpaces(std::string* text) {
  std::string& t = *text;
  std::size_t total = t.size();

  // " ?", " !", " .", " ," -> drop the space.
  std::size_t n = total;
  total = n ? 1 : 0;
  for (std::size_t i = 1; i < n; ++i) {
    const char x = t[i];
    if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
    t[total++] = x;
  }

  // " ' " -> "'".
  n = total;
  total = n ? 1 : 0;
  for (std::size_t i = 1; i < n; ++i) {
    const char x = t[i];
    if (x == '\'' && i + 1 < n && t[i - 1] == ' ' && t[i + 1] == ' ') {
      --total;
      t[++i] = '\0';
    }
    t[total++] = x;
  }

  // " 's", " 'm", " 're", " 've" -> drop the space (" 't", " 'd", " 'll" keep it).
  n = total;
  total = n ? 1 : 0;
  for (std::size_t i = 1; i < n; ++i) {
    const char x = t[i];
    if (t[i - 1] == ' ' && x == '\'' && i + 1 < n) {
      const char x1 = t[i + 1];
      if (x1 == 's' || x1 == 'm') {
        --total;
      } else if (x1 != 't' && x1 != 'd' && i + 2 < n) {
        const char x2 = t[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --total;
      }
    }
    t[total++] = x;
  }
  t.resize(total);
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromGguf(const gguf::GgufFile& file) {
  SG_ASSIGN_OR_RETURN(Vocab vocab, LoadVocab(file));
  return FromVocab(std::move(vocab));
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromVocab(Vocab vocab) {
  std::optional<PreTokenizer> pre_tokenizer;
  if (vocab.type == VocabType::kBpe) {
    SG_ASSIGN_OR_RETURN(PreTokenizer pre, PreTokenizer::Create(vocab.pre.type));
    pre_tokenizer.emplace(std::move(pre));
  }
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(vocab), std::move(pre_tokenizer)));
}

Tokenizer::Tokenizer(Vocab vocab, std::optional<PreTokenizer> pre_tokenizer)
    : vocab_(std::move(vocab)), pre_tokenizer_(std::move(pre_tokenizer)), splitter_(vocab_) {
  pieces_.reserve(vocab_.tokens.size());
  for (const TokenData& token : vocab_.tokens) pieces_.push_back(PieceOf(vocab_, token));
}

std::vector<TokenId> Tokenizer::Encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  std::vector<TokenId> out;
  const std::vector<Fragment> fragments = splitter_.Split(text, parse_special);
  if (add_special && vocab_.add_bos) out.push_back(vocab_.special.bos);

  if (vocab_.type == VocabType::kSpm) {
    bool prev_special = true;  // the dummy prefix goes before the first text fragment
    std::string escaped;
    for (const Fragment& fragment : fragments) {
      if (fragment.is_token()) {
        out.push_back(fragment.token);
        prev_special = true;
        continue;
      }
      escaped.clear();
      if (vocab_.add_space_prefix && prev_special) escaped.push_back(' ');
      escaped.append(text.substr(fragment.offset, fragment.length));
      ReplaceAll(&escaped, " ", kSpmSpace);
      SpmTokenize(vocab_, escaped, &out);
      prev_special = false;
    }
  } else {
    for (const Fragment& fragment : fragments) {
      if (fragment.is_token()) {
        out.push_back(fragment.token);
      } else {
        BpeTokenize(vocab_, *pre_tokenizer_, text.substr(fragment.offset, fragment.length), &out);
      }
    }
  }

  if (add_special && vocab_.add_eos) out.push_back(vocab_.special.eos);
  return out;
}

std::string Tokenizer::Decode(std::span<const TokenId> ids, const DecodeOptions& options) const {
  bool remove_space = vocab_.add_space_prefix;
  if (options.remove_special && vocab_.add_bos && !ids.empty() &&
      ids.front() == vocab_.special.bos) {
    remove_space = false;
    ids = ids.subspan(1);
  }
  if (options.remove_special && vocab_.add_eos && !ids.empty() &&
      ids.back() == vocab_.special.eos) {
    ids = ids.first(ids.size() - 1);
  }

  std::string text;
  for (TokenId id : ids) {
    std::string_view piece = TokenToPiece(id, options.unparse_special);
    // Only the first token may lose its leading space, even when it renders as nothing.
    if (remove_space && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
    remove_space = false;
    text.append(piece);
  }
  if (vocab_.type == VocabType::kBpe && vocab_.pre.clean_spaces) CleanSpaces(&text);
  return text;
}

std::string_view Tokenizer::TokenToPiece(TokenId id, bool special) const {
  if (!vocab_.IsValid(id)) return {};
  if (!special && (vocab_.tokens[id].attrs & (token_attr::kUnknown | token_attr::kControl))) {
    return {};
  }
  return pieces_[id];
}

std::string_view Tokenizer::TokenText(TokenId id) const {
  return vocab_.IsValid(id) ? std::string_view(vocab_.tokens[id].text) : std::string_view();
}

std::uint32_t Tokenizer::TokenAttrs(TokenId id) const {
  return vocab_.IsValid(id) ? vocab_.tokens[id].attrs : 0;
}

Result<std::string> Tokenizer::ApplyChatTemplate(std::span<const ChatMessage> messages,
                                                 bool add_generation_prompt,
                                                 std::string_view template_name_or_text) const {
  SG_ASSIGN_OR_RETURN(ChatTemplateKind kind,
                      ResolveChatTemplate(template_name_or_text, vocab_.chat_template));
  return FormatChat(kind, messages, add_generation_prompt);
}

}  // namespace smartgen::tokenizer
