// Pre-tokenizers of byte-level BPE vocabularies: the regex splits selected by the GGUF key
// `tokenizer.ggml.pre`, matching llama.cpp build 4748 (llama-vocab.cpp, unicode.cpp).
//
//   gpt-2 (also phi-2, roberta-bpe, mpt, olmo, jais, jina-*):  GPT-2's pattern
//   llama3 / llama-v3 / llama-bpe / falcon3, dbrx, smaug-bpe:  Llama 3's pattern (\p{N}{1,3})
//   qwen2, stablelm2, megrez:                                    Llama 3's pattern with \p{N}
//   starcoder, smollm, refact, command-r, codeshell, exaone,
//   minerva-7b:                                                  \p{N}, then GPT-2's pattern
//   default (or key absent):                                     llama.cpp's 4-regex default
// Other names llama.cpp knows (deepseek*, falcon, tekken, bloom, ...) give kUnimplemented.
#pragma once

#include <string_view>
#include <vector>

#include "core/result.h"
#include "tokenizer/regex.h"

namespace smartgen::tokenizer {

enum class PreTokenizerType { kDefault, kGpt2, kLlama3, kQwen2, kStarCoder };

std::string_view PreTokenizerTypeName(PreTokenizerType type);

// What a `tokenizer.ggml.pre` name selects: the regexes and llama.cpp's per-name defaults.
struct PreTokenizerConfig {
  PreTokenizerType type = PreTokenizerType::kDefault;
  bool clean_spaces = true;    // detokenize applies clean_up_tokenization_spaces
  bool add_bos = false;        // default of tokenizer.ggml.add_bos_token
  bool ignore_merges = false;  // a pre-token that is itself a token skips the merges
};

// `name` is the value of tokenizer.ggml.pre ("" when absent). kUnimplemented for a name
// llama.cpp supports and we do not, kInvalidArgument for a name nobody knows.
Result<PreTokenizerConfig> LookupPreTokenizer(std::string_view name);

// Thread-safety: immutable after Create(); Split() may run concurrently.
class PreTokenizer {
 public:
  static Result<PreTokenizer> Create(PreTokenizerType type);

  // Splits `text` into pieces as llama.cpp's unicode_regex_split does: each regex in turn is
  // applied to every piece the previous one produced (so lookaheads never see past a piece),
  // and both its matches and the text between them become pieces. The pieces are views into
  // `text`, in order, non-empty, and cover it exactly. Malformed UTF-8 is kept byte-exact.
  std::vector<std::string_view> Split(std::string_view text) const;

  PreTokenizerType type() const { return type_; }

 private:
  PreTokenizer() = default;

  PreTokenizerType type_ = PreTokenizerType::kDefault;
  std::vector<Regex> regexes_;
};

}  // namespace smartgen::tokenizer
