// Tokenizer: text <-> token ids for a model's vocabulary, built from its GGUF metadata.
//
//   SG_ASSIGN_OR_RETURN(auto tok, tokenizer::Tokenizer::FromGguf(file));
//   std::vector<TokenId> ids = tok->Encode(prompt, /*add_special=*/true, /*parse_special=*/true);
//   std::string text = tok->Decode(generated);
//
// Vocabularies: `llama` (SentencePiece BPE over scores, byte fallback) and `gpt2` (byte-level
// BPE with merges and the pre-tokenizers of GPT-2, Llama 3, Qwen2 and StarCoder/SmolLM); see
// vocab.h, pre_tokenizer.h. Encode and Decode reproduce llama.cpp build 4748's llama_tokenize
// and llama_detokenize exactly (tested against its golden files).
//
// Thread-safety: immutable after construction; every const method may run concurrently.
// Not copyable or movable (internal views point into the vocabulary); hold it by unique_ptr.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "gguf/gguf_reader.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/vocab.h"

namespace smartgen::tokenizer {

// Options of Decode(); the defaults are llama_detokenize(remove_special=false,
// unparse_special=false), which is how the golden `greedy.text` was made.
struct DecodeOptions {
  // Drop a leading BOS and a trailing EOS when the vocabulary adds them.
  bool remove_special = false;
  // Render CONTROL and UNKNOWN tokens as their text (else they produce nothing).
  bool unparse_special = false;
};

class Tokenizer {
 public:
  // Reads the `tokenizer.*` keys of `file` (which may be closed afterwards). Errors as
  // LoadVocab(): missing keys, wrong array types or lengths, bad merges, unsupported
  // vocabulary or pre-tokenizer type.
  static Result<std::unique_ptr<Tokenizer>> FromGguf(const gguf::GgufFile& file);
  // `vocab` must come from LoadVocab() (possibly edited only in ways that keep its
  // invariants: token_to_id, special_tokens and eog_ids consistent with tokens).
  static Result<std::unique_ptr<Tokenizer>> FromVocab(Vocab vocab);

  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Token ids of `text`. Any bytes are accepted. Valid UTF-8 always round-trips through
  // TokenToPiece; malformed UTF-8 is handled as llama.cpp does: byte-level BPE keeps every
  // byte its vocabulary has a token for (GPT-2 has all 256), SPM falls back to <0xNN> tokens
  // (a bogus lead byte may swallow part of a following "▁", so that space comes back as the
  // bytes of "▁"). `add_special`: prepend BOS / append EOS as the vocabulary's add_bos /
  // add_eos say.
  // `parse_special`: text equal to a CONTROL token (e.g. "<|im_start|>") becomes that token;
  // otherwise it is tokenized as plain text (USER_DEFINED tokens are split out either way).
  std::vector<TokenId> Encode(std::string_view text, bool add_special, bool parse_special) const;

  // The text of `ids` (llama_detokenize): pieces concatenated; for SPM the first piece loses
  // one leading space (the dummy prefix); for BPE vocabularies with clean_spaces llama.cpp's
  // clean-up (" ." -> ".", " 's" -> "'s", ...) is applied. Out-of-range ids produce nothing.
  std::string Decode(std::span<const TokenId> ids, const DecodeOptions& options = {}) const;

  // The bytes token `id` stands for (llama_token_to_piece, lstrip 0): "▁" -> " " for SPM,
  // "<0x0A>" -> "\n", GPT-2 characters -> bytes. A piece may be part of a UTF-8 character.
  // With `special` false, CONTROL and UNKNOWN tokens give "". Out-of-range ids give "".
  // The view lives as long as the Tokenizer. For streaming, concatenating pieces equals
  // Decode() except for the SPM first-space strip and the BPE clean_spaces rules.
  std::string_view TokenToPiece(TokenId id, bool special = true) const;

  // The token's text as stored in the vocabulary ("" for an out-of-range id).
  std::string_view TokenText(TokenId id) const;
  // The id of the token whose vocabulary text is exactly `text`, or kNoToken.
  TokenId FindToken(std::string_view text) const { return vocab_.Find(text); }
  std::uint32_t TokenAttrs(TokenId id) const;  // token_attr bits; 0 for out-of-range ids
  bool IsControl(TokenId id) const { return (TokenAttrs(id) & token_attr::kControl) != 0; }
  // Whether generating `id` ends generation (EOS, EOT, <|im_end|>, <|endoftext|>, ...).
  bool IsEog(TokenId id) const { return vocab_.IsEog(id); }

  std::int32_t n_vocab() const { return vocab_.n_tokens(); }
  VocabType type() const { return vocab_.type; }
  TokenId bos_id() const { return vocab_.special.bos; }
  TokenId eos_id() const { return vocab_.special.eos; }
  TokenId eot_id() const { return vocab_.special.eot; }
  TokenId unk_id() const { return vocab_.special.unk; }
  TokenId pad_id() const { return vocab_.special.pad; }
  TokenId nl_id() const { return vocab_.special.nl; }
  bool add_bos() const { return vocab_.add_bos; }
  bool add_eos() const { return vocab_.add_eos; }
  const std::vector<TokenId>& eog_ids() const { return vocab_.eog_ids; }
  const Vocab& vocab() const { return vocab_; }

  // The model's tokenizer.chat_template text ("" when it has none).
  const std::string& chat_template() const { return vocab_.chat_template; }

  // Formats `messages` as a prompt. The family is `template_name_or_text` when given (a name
  // such as "chatml" or "llama3", or Jinja template text), else detected from the model's
  // tokenizer.chat_template, else a plain completion prompt (ResolveChatTemplate). kInvalidArgument for a
  // template of an unsupported family. Encode the result with parse_special = true.
  Result<std::string> ApplyChatTemplate(std::span<const ChatMessage> messages,
                                        bool add_generation_prompt,
                                        std::string_view template_name_or_text = {}) const;

 private:
  Tokenizer(Vocab vocab, std::optional<PreTokenizer> pre_tokenizer);

  Vocab vocab_;
  std::optional<PreTokenizer> pre_tokenizer_;  // BPE only
  SpecialTokenSplitter splitter_;
  std::vector<std::string> pieces_;  // TokenToPiece(id, special = true), by id
};

}  // namespace smartgen::tokenizer
