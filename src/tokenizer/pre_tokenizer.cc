#include "tokenizer/pre_tokenizer.h"

#include <array>

#include "core/log.h"

namespace smartgen::tokenizer {
namespace {

// The patterns, as llama.cpp's regex_exprs (llama-vocab.cpp, llm_tokenizer_bpe). GPT-2's ends
// in `|\s+` as in llama.cpp's hand-written matcher for it; since text between matches becomes
// a piece anyway, the split is the same with or without it.
constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kDigit = R"(\p{N})";
constexpr std::string_view kDefaultPunct = R"([\p{P}\$\+<=>\^~\|]+)";
constexpr std::string_view kDefaultDigits = R"(\p{N}+)";
constexpr std::string_view kDefaultThreeDigits = R"([0-9][0-9][0-9])";

std::vector<std::string_view> PatternsFor(PreTokenizerType type) {
  switch (type) {
    case PreTokenizerType::kGpt2:
      return {kGpt2};
    case PreTokenizerType::kLlama3:
      return {kLlama3};
    case PreTokenizerType::kQwen2:
      return {kQwen2};
    case PreTokenizerType::kStarCoder:
      return {kDigit, kGpt2};
    case PreTokenizerType::kDefault:
      break;
  }
  return {kDefaultPunct, kGpt2, kDefaultDigits, kDefaultThreeDigits};
}

struct NamedConfig {
  std::string_view name;
  PreTokenizerConfig config;
};

using T = PreTokenizerType;
// clang-format off
constexpr std::array kKnownNames = {
    NamedConfig{"default",      {T::kDefault,   true,  false, false}},
    NamedConfig{"llama3",       {T::kLlama3,    true,  true,  true}},
    NamedConfig{"llama-v3",     {T::kLlama3,    true,  true,  true}},
    NamedConfig{"llama-bpe",    {T::kLlama3,    true,  true,  true}},
    NamedConfig{"falcon3",      {T::kLlama3,    true,  true,  true}},
    NamedConfig{"dbrx",         {T::kLlama3,    true,  false, false}},
    NamedConfig{"smaug-bpe",    {T::kLlama3,    true,  false, false}},
    NamedConfig{"qwen2",        {T::kQwen2,     false, false, false}},
    NamedConfig{"stablelm2",    {T::kQwen2,     true,  false, false}},
    NamedConfig{"megrez",       {T::kQwen2,     true,  false, false}},
    NamedConfig{"starcoder",    {T::kStarCoder, true,  false, false}},
    NamedConfig{"refact",       {T::kStarCoder, true,  false, false}},
    NamedConfig{"command-r",    {T::kStarCoder, false, false, false}},
    NamedConfig{"smollm",       {T::kStarCoder, false, false, false}},
    NamedConfig{"codeshell",    {T::kStarCoder, true,  false, false}},
    NamedConfig{"exaone",       {T::kStarCoder, true,  false, false}},
    NamedConfig{"minerva-7b",   {T::kStarCoder, true,  false, false}},
    NamedConfig{"gpt-2",        {T::kGpt2,      true,  false, false}},
    NamedConfig{"phi-2",        {T::kGpt2,      true,  false, false}},
    NamedConfig{"jina-es",      {T::kGpt2,      true,  false, false}},
    NamedConfig{"jina-de",      {T::kGpt2,      true,  false, false}},
    NamedConfig{"gigachat",     {T::kGpt2,      true,  false, false}},
    NamedConfig{"jina-v1-en",   {T::kGpt2,      true,  false, false}},
    NamedConfig{"jina-v2-es",   {T::kGpt2,      true,  false, false}},
    NamedConfig{"jina-v2-de",   {T::kGpt2,      true,  false, false}},
    NamedConfig{"jina-v2-code", {T::kGpt2,      true,  false, false}},
    NamedConfig{"roberta-bpe",  {T::kGpt2,      true,  false, false}},
    NamedConfig{"mpt",          {T::kGpt2,      true,  false, false}},
    NamedConfig{"olmo",         {T::kGpt2,      true,  false, false}},
    NamedConfig{"jais",         {T::kGpt2,      true,  false, false}},
};
// clang-format on

// Names llama.cpp accepts with pre-tokenizers we have not implemented.
constexpr std::array<std::string_view, 11> kUnsupportedNames = {
    "deepseek-llm", "deepseek-coder", "deepseek-v3", "falcon",       "poro-chat", "chatglm-bpe",
    "viking",       "tekken",         "bloom",       "gpt3-finnish", "chameleon"};

}  // namespace

std::string_view PreTokenizerTypeName(PreTokenizerType type) {
  switch (type) {
    case PreTokenizerType::kDefault:
      return "default";
    case PreTokenizerType::kGpt2:
      return "gpt-2";
    case PreTokenizerType::kLlama3:
      return "llama3";
    case PreTokenizerType::kQwen2:
      return "qwen2";
    case PreTokenizerType::kStarCoder:
      return "starcoder";
  }
  return "unknown";
}

Result<PreTokenizerConfig> LookupPreTokenizer(std::string_view name) {
  if (name.empty()) {
    SG_LOG_WARN("tokenizer",
                "tokenizer.ggml.pre is missing; using the 'default' pre-tokenizer "
                "(generation quality may suffer)");
    return kKnownNames[0].config;
  }
  for (const NamedConfig& known : kKnownNames) {
    if (known.name == name) return known.config;
  }
  for (std::string_view unsupported : kUnsupportedNames) {
    if (unsupported == name) {
      return Unimplemented("pre-tokenizer '{}' (tokenizer.ggml.pre) is not supported", name);
    }
  }
  return InvalidArgument("unknown pre-tokenizer '{}' (tokenizer.ggml.pre)", name);
}

Result<PreTokenizer> PreTokenizer::Create(PreTokenizerType type) {
  PreTokenizer pre;
  pre.type_ = type;
  for (std::string_view pattern : PatternsFor(type)) {
    SG_ASSIGN_OR_RETURN(Regex regex, Regex::Compile(pattern));
    pre.regexes_.push_back(std::move(regex));
  }
  return pre;
}

std::vector<std::string_view> PreTokenizer::Split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (text.empty()) return pieces;
  pieces.push_back(text);
  std::vector<std::string_view> next;
  std::vector<ByteSpan> matches;
  for (const Regex& regex : regexes_) {
    next.clear();
    for (std::string_view piece : pieces) {
      matches.clear();
      const Status status = regex.FindAll(piece, &matches);
      if (!status.ok()) {
        // Keep going with what matched; the rest stays one piece (still byte-exact).
        SG_LOG_WARN("tokenizer", "pre-tokenizer: {}", status.ToString());
      }
      std::size_t done = 0;
      for (const ByteSpan& m : matches) {
        if (m.begin > done) next.push_back(piece.substr(done, m.begin - done));
        next.push_back(piece.substr(m.begin, m.end - m.begin));
        done = m.end;
      }
      if (done < piece.size()) next.push_back(piece.substr(done));
    }
    pieces.swap(next);
  }
  return pieces;
}

}  // namespace smartgen::tokenizer
