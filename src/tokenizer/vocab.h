// Vocab: a tokenizer vocabulary read from GGUF `tokenizer.*` metadata, with llama.cpp's
// (build 4748, llama_vocab::impl::load) defaults and fix-ups, so that tokenization matches it.
//
// Keys read: tokenizer.ggml.model ("llama" -> SentencePiece BPE, "gpt2" -> byte-level BPE),
// .pre, .tokens, .scores, .token_type, .merges, .add_space_prefix, .add_bos_token,
// .add_eos_token, the special ids (.bos_token_id, .eos_token_id, .eot_token_id, ...), and
// tokenizer.chat_template. A missing required key, an array of the wrong type or length, a
// duplicate token text or a merge without a separating space is an error naming the key and
// index; never a crash. A special id past the vocabulary is ignored (llama.cpp warns and keeps
// its default), as real files carry 0xFFFFFFFF there.
//
// Thread-safety: immutable after LoadVocab(); concurrent reads are safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "gguf/gguf_reader.h"
#include "tokenizer/pre_tokenizer.h"

namespace smartgen::tokenizer {

using TokenId = std::int32_t;
inline constexpr TokenId kNoToken = -1;

enum class VocabType { kSpm, kBpe };
std::string_view VocabTypeName(VocabType type);  // "SPM", "BPE"

// The values of tokenizer.ggml.token_type (llama.cpp's llama_token_type).
enum class TokenType : std::int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// Per-token attribute bits (llama.cpp's llama_token_attr).
namespace token_attr {
inline constexpr std::uint32_t kUndefined = 0;
inline constexpr std::uint32_t kUnknown = 1u << 0;
inline constexpr std::uint32_t kUnused = 1u << 1;
inline constexpr std::uint32_t kNormal = 1u << 2;
inline constexpr std::uint32_t kControl = 1u << 3;
inline constexpr std::uint32_t kUserDefined = 1u << 4;
inline constexpr std::uint32_t kByte = 1u << 5;
inline constexpr std::uint32_t kLstrip = 1u << 7;  // eat whitespace left of the token
inline constexpr std::uint32_t kRstrip = 1u << 8;  // eat whitespace right of the token
}  // namespace token_attr

struct TokenData {
  std::string text;  // as stored in the GGUF ("▁Hello", "ĠHello", "<0x0A>", "<|im_end|>")
  float score = 0.0f;
  std::uint32_t attrs = token_attr::kNormal;
};

// Special token ids; kNoToken where the vocabulary has none.
struct SpecialIds {
  TokenId bos = kNoToken;
  TokenId eos = kNoToken;
  TokenId eot = kNoToken;
  TokenId eom = kNoToken;
  TokenId unk = kNoToken;
  TokenId sep = kNoToken;
  TokenId pad = kNoToken;
  TokenId mask = kNoToken;
  TokenId nl = kNoToken;  // the newline token
  TokenId fim_pre = kNoToken;
  TokenId fim_suf = kNoToken;
  TokenId fim_mid = kNoToken;
  TokenId fim_pad = kNoToken;
  TokenId fim_rep = kNoToken;
  TokenId fim_sep = kNoToken;
};

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIndex = std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>>;

struct Vocab {
  VocabType type = VocabType::kSpm;
  std::string pre_name;    // tokenizer.ggml.pre as written ("" when absent)
  PreTokenizerConfig pre;  // BPE only
  std::vector<TokenData> tokens;
  TokenIndex token_to_id;
  // BPE merges: "left right" (the merge string as stored) -> rank (its index; first wins).
  std::unordered_map<std::string, int, StringHash, std::equal_to<>> merge_ranks;
  SpecialIds special;
  bool add_space_prefix = false;  // SPM: prepend "▁" to text that follows BOS/start/special
  bool add_bos = false;
  bool add_eos = false;
  // Tokens whose text is split out before tokenizing (CONTROL, USER_DEFINED, UNKNOWN),
  // longest text first, ties by id.
  std::vector<TokenId> special_tokens;
  std::vector<TokenId> eog_ids;  // end-of-generation tokens, sorted
  std::string chat_template;     // tokenizer.chat_template, "" when absent
  std::string model_name;        // general.name, "" when absent

  std::int32_t n_tokens() const { return static_cast<std::int32_t>(tokens.size()); }
  bool IsValid(TokenId id) const { return id >= 0 && id < n_tokens(); }
  // The id of the token whose text is exactly `text`, or kNoToken.
  TokenId Find(std::string_view text) const;
  // The merge rank of (left, right), or -1. `scratch` is reused to build the key.
  int MergeRank(std::string_view left, std::string_view right, std::string* scratch) const;
  // The token for raw byte `b`: SPM "<0xNN>" (else the one-byte text), BPE the byte's GPT-2
  // character. kNoToken when the vocabulary lacks it.
  TokenId ByteToken(std::uint8_t b) const;
  bool IsEog(TokenId id) const;
};

Result<Vocab> LoadVocab(const gguf::GgufFile& file);

}  // namespace smartgen::tokenizer
