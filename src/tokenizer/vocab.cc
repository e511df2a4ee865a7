#include "tokenizer/vocab.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <utility>

#include "core/log.h"
#include "tokenizer/byte_unicode.h"

namespace smartgen::tokenizer {
namespace {

constexpr std::string_view kKeyModel = "tokenizer.ggml.model";
constexpr std::string_view kKeyPre = "tokenizer.ggml.pre";
constexpr std::string_view kKeyTokens = "tokenizer.ggml.tokens";
constexpr std::string_view kKeyScores = "tokenizer.ggml.scores";
constexpr std::string_view kKeyTokenType = "tokenizer.ggml.token_type";
constexpr std::string_view kKeyMerges = "tokenizer.ggml.merges";

std::uint32_t AttrsFromType(std::int64_t type) {
  switch (static_cast<TokenType>(type)) {
    case TokenType::kNormal:
      return token_attr::kNormal;
    case TokenType::kUnknown:
      return token_attr::kUnknown;
    case TokenType::kControl:
      return token_attr::kControl;
    case TokenType::kUserDefined:
      return token_attr::kUserDefined;
    case TokenType::kUnused:
      return token_attr::kUnused;
    case TokenType::kByte:
      return token_attr::kByte;
    case TokenType::kUndefined:
      break;
  }
  return token_attr::kUndefined;
}

// An optional key: absent -> `fallback`; present with a wrong type -> error naming the key.
Result<bool> GetBoolOr(const gguf::GgufFile& file, std::string_view key, bool fallback) {
  const gguf::Value* v = file.Find(key);
  if (v == nullptr) return fallback;
  auto b = v->AsBool();
  if (!b.ok()) return b.status().WithContext(std::string(key));
  return *b;
}

Result<std::string> GetStringOr(const gguf::GgufFile& file, std::string_view key) {
  const gguf::Value* v = file.Find(key);
  if (v == nullptr) return std::string();
  auto s = v->AsString();
  if (!s.ok()) return s.status().WithContext(std::string(key));
  return std::string(*s);
}

// Chooses the vocabulary type and llama.cpp's defaults for it.
Status InitModelType(const gguf::GgufFile& file, Vocab* vocab) {
  const gguf::Value* model_value = file.Find(kKeyModel);
  if (model_value == nullptr) return NotFound("tokenizer: missing key '{}'", kKeyModel);
  auto model = model_value->AsString();
  if (!model.ok()) return model.status().WithContext(std::string(kKeyModel));
  SG_ASSIGN_OR_RETURN(vocab->pre_name, GetStringOr(file, kKeyPre));

  SpecialIds& sp = vocab->special;
  if (*model == "llama") {
    vocab->type = VocabType::kSpm;
    sp.bos = 1, sp.eos = 2, sp.unk = 0;
    vocab->add_space_prefix = true;
    vocab->add_bos = true;
    vocab->add_eos = false;
  } else if (*model == "gpt2") {
    vocab->type = VocabType::kBpe;
    sp.bos = 11, sp.eos = 11;
    SG_ASSIGN_OR_RETURN(vocab->pre, LookupPreTokenizer(vocab->pre_name));
    vocab->add_space_prefix = false;
    vocab->add_bos = vocab->pre.add_bos;
    vocab->add_eos = false;
  } else if (*model == "no_vocab" || *model == "none") {
    return Unimplemented("tokenizer: the model has no vocabulary ({} = '{}')", kKeyModel, *model);
  } else if (*model == "bert" || *model == "t5" || *model == "rwkv") {
    return Unimplemented("tokenizer: '{}' vocabularies are not supported ({})", *model, kKeyModel);
  } else {
    return InvalidArgument("tokenizer: unknown {} '{}'", kKeyModel, *model);
  }
  SG_ASSIGN_OR_RETURN(vocab->add_space_prefix,
                      GetBoolOr(file, "tokenizer.ggml.add_space_prefix", vocab->add_space_prefix));
  return Status::Ok();
}

Status LoadTokens(const gguf::GgufFile& file, Vocab* vocab) {
  const gguf::Value* tokens_value = file.Find(kKeyTokens);
  if (tokens_value == nullptr) return NotFound("tokenizer: missing key '{}'", kKeyTokens);
  auto tokens = tokens_value->AsArray();
  if (!tokens.ok()) return tokens.status().WithContext(std::string(kKeyTokens));
  const std::size_t n = tokens->size();
  if (n == 0) return InvalidArgument("tokenizer: '{}' is empty", kKeyTokens);
  if (n > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    return InvalidArgument("tokenizer: '{}' has {} entries, too many", kKeyTokens, n);
  }

  std::span<const gguf::Value> scores;
  if (const gguf::Value* v = file.Find(kKeyScores)) {
    SG_ASSIGN_OR_RETURN(scores, v->AsArray());
    if (scores.size() != n) {
      return InvalidArgument("tokenizer: '{}' has {} entries but '{}' has {}", kKeyScores,
                             scores.size(), kKeyTokens, n);
    }
  }
  std::span<const gguf::Value> types;
  if (const gguf::Value* v = file.Find(kKeyTokenType)) {
    SG_ASSIGN_OR_RETURN(types, v->AsArray());
    if (types.size() != n) {
      return InvalidArgument("tokenizer: '{}' has {} entries but '{}' has {}", kKeyTokenType,
                             types.size(), kKeyTokens, n);
    }
  }

  vocab->tokens.resize(n);
  vocab->token_to_id.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    TokenData& token = vocab->tokens[i];
    auto text = (*tokens)[i].AsString();
    if (!text.ok()) return text.status().WithContext(fmt::format("{}[{}]", kKeyTokens, i));
    token.text = text->empty() ? fmt::format("[EMPTY_{}]", i) : std::string(*text);
    if (!scores.empty()) {
      auto score = scores[i].AsFloat();
      if (!score.ok()) return score.status().WithContext(fmt::format("{}[{}]", kKeyScores, i));
      token.score = static_cast<float>(*score);
    }
    if (!types.empty()) {
      auto type = types[i].AsInt();
      if (!type.ok()) return type.status().WithContext(fmt::format("{}[{}]", kKeyTokenType, i));
      token.attrs = AttrsFromType(*type);
    }
    const auto [it, inserted] = vocab->token_to_id.emplace(token.text, static_cast<TokenId>(i));
    if (!inserted) {
      return InvalidArgument("tokenizer: '{}' holds the text '{}' twice (ids {} and {})",
                             kKeyTokens, token.text, it->second, i);
    }
  }
  return Status::Ok();
}

Status LoadMerges(const gguf::GgufFile& file, Vocab* vocab) {
  const gguf::Value* merges_value = file.Find(kKeyMerges);
  if (merges_value == nullptr) {
    return NotFound("tokenizer: missing key '{}' (required by gpt2 vocabularies)", kKeyMerges);
  }
  auto merges = merges_value->AsArray();
  if (!merges.ok()) return merges.status().WithContext(std::string(kKeyMerges));
  vocab->merge_ranks.reserve(merges->size());
  for (std::size_t i = 0; i < merges->size(); ++i) {
    auto merge = (*merges)[i].AsString();
    if (!merge.ok()) return merge.status().WithContext(fmt::format("{}[{}]", kKeyMerges, i));
    // As llama.cpp: the first space at or after byte 1 separates the pair (so "Ġ Ġ" works).
    const std::size_t space = merge->find(' ', 1);
    if (space == std::string_view::npos || space + 1 >= merge->size()) {
      return InvalidArgument("tokenizer: {}[{}] = '{}' is not a pair 'left right'", kKeyMerges, i,
                             *merge);
    }
    vocab->merge_ranks.emplace(std::string(*merge), static_cast<int>(i));
  }
  return Status::Ok();
}

Status LoadSpecialIds(const gguf::GgufFile& file, Vocab* vocab) {
  SpecialIds& sp = vocab->special;
  const std::array<std::pair<std::string_view, TokenId*>, 17> keys = {{
      {"tokenizer.ggml.bos_token_id", &sp.bos},
      {"tokenizer.ggml.eos_token_id", &sp.eos},
      {"tokenizer.ggml.eot_token_id", &sp.eot},
      {"tokenizer.ggml.eom_token_id", &sp.eom},
      {"tokenizer.ggml.unknown_token_id", &sp.unk},
      {"tokenizer.ggml.seperator_token_id", &sp.sep},  // sic: llama.cpp's spelling
      {"tokenizer.ggml.padding_token_id", &sp.pad},
      {"tokenizer.ggml.mask_token_id", &sp.mask},
      {"tokenizer.ggml.fim_pre_token_id", &sp.fim_pre},
      {"tokenizer.ggml.fim_suf_token_id", &sp.fim_suf},
      {"tokenizer.ggml.fim_mid_token_id", &sp.fim_mid},
      {"tokenizer.ggml.fim_pad_token_id", &sp.fim_pad},
      {"tokenizer.ggml.fim_rep_token_id", &sp.fim_rep},
      {"tokenizer.ggml.fim_sep_token_id", &sp.fim_sep},
      {"tokenizer.ggml.prefix_token_id", &sp.fim_pre},  // deprecated names
      {"tokenizer.ggml.suffix_token_id", &sp.fim_suf},
      {"tokenizer.ggml.middle_token_id", &sp.fim_mid},
  }};
  for (const auto& [key, id] : keys) {
    const gguf::Value* v = file.Find(key);
    if (v == nullptr) continue;
    auto value = v->AsInt();
    if (!value.ok()) return value.status().WithContext(std::string(key));
    if (*value < 0 || *value >= vocab->n_tokens()) {
      SG_LOG_DEBUG("tokenizer", "ignoring {} = {} (vocabulary has {} tokens)", key, *value,
                   vocab->n_tokens());
      continue;
    }
    *id = static_cast<TokenId>(*value);
  }
  SG_ASSIGN_OR_RETURN(vocab->add_bos,
                      GetBoolOr(file, "tokenizer.ggml.add_bos_token", vocab->add_bos));
  SG_ASSIGN_OR_RETURN(vocab->add_eos,
                      GetBoolOr(file, "tokenizer.ggml.add_eos_token", vocab->add_eos));
  return Status::Ok();
}

// llama.cpp finds EOT/EOM/FIM tokens by their text when no key names them, and forces every
// such token to CONTROL. We scan in id order so the choice is deterministic.
void DetectSpecialsByText(Vocab* vocab) {
  SpecialIds& sp = vocab->special;
  struct Rule {
    TokenId* id;
    std::vector<std::string_view> texts;
  };
  const std::vector<Rule> rules = {
      {&sp.eot,
       {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>",
        "<\xEF\xBD\x9C"
        "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"}},
      {&sp.eom, {"<|eom_id|>"}},
      {&sp.fim_pre,
       {"<|fim_prefix|>", "<fim-prefix>",
        "<\xEF\xBD\x9C"
        "fim\xE2\x96\x81"
        "begin\xEF\xBD\x9C>",
        "<PRE>"}},
      {&sp.fim_suf,
       {"<|fim_suffix|>", "<fim-suffix>",
        "<\xEF\xBD\x9C"
        "fim\xE2\x96\x81hole\xEF\xBD\x9C>",
        "<SUF>"}},
      {&sp.fim_mid,
       {"<|fim_middle|>", "<fim-middle>",
        "<\xEF\xBD\x9C"
        "fim\xE2\x96\x81"
        "end\xEF\xBD\x9C>",
        "<MID>"}},
      {&sp.fim_pad, {"<|fim_pad|>", "<fim-pad>", "<PAD>"}},
      {&sp.fim_rep, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>"}},
      {&sp.fim_sep, {"<|file_sep|>"}},
  };
  for (const Rule& rule : rules) {
    if (*rule.id != kNoToken) continue;
    for (TokenId id = 0; id < vocab->n_tokens() && *rule.id == kNoToken; ++id) {
      const std::string& text = vocab->tokens[id].text;
      if (std::find(rule.texts.begin(), rule.texts.end(), text) != rule.texts.end()) {
        *rule.id = id;
        if ((vocab->tokens[id].attrs & token_attr::kControl) == 0) {
          vocab->tokens[id].attrs = token_attr::kControl;
        }
      }
    }
  }

  // End-of-generation set: FIM pad/repo/sep, every token with an EOG-looking text, EOS, EOT
  // and EOM.
  std::vector<TokenId> eog;
  for (TokenId id : {sp.fim_pad, sp.fim_rep, sp.fim_sep}) {
    if (id != kNoToken) eog.push_back(id);
  }
  static constexpr std::array<std::string_view, 7> kEogTexts = {
      "<|eot_id|>",    "<|im_end|>", "<|end|>", "<end_of_turn>",
      "<|endoftext|>", "<|eom_id|>", "<EOT>"};
  for (TokenId id = 0; id < vocab->n_tokens(); ++id) {
    TokenData& token = vocab->tokens[id];
    if (std::find(kEogTexts.begin(), kEogTexts.end(), token.text) != kEogTexts.end()) {
      eog.push_back(id);
      if ((token.attrs & token_attr::kControl) == 0) token.attrs = token_attr::kControl;
    }
  }
  for (TokenId id : {sp.eos, sp.eot, sp.eom}) {
    if (id != kNoToken) eog.push_back(id);
  }
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  vocab->eog_ids = std::move(eog);
}

void BuildSpecialTokenList(Vocab* vocab) {
  constexpr std::uint32_t kSpecial =
      token_attr::kControl | token_attr::kUserDefined | token_attr::kUnknown;
  for (TokenId id = 0; id < vocab->n_tokens(); ++id) {
    if (vocab->tokens[id].attrs & kSpecial) vocab->special_tokens.push_back(id);
  }
  std::stable_sort(vocab->special_tokens.begin(), vocab->special_tokens.end(),
                   [&](TokenId a, TokenId b) {
                     return vocab->tokens[a].text.size() > vocab->tokens[b].text.size();
                   });

  // llama.cpp's per-model attribute fix-up: Phi-3 special tokens eat the whitespace after them.
  std::string name = vocab->model_name;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    for (TokenId id : vocab->special_tokens) vocab->tokens[id].attrs |= token_attr::kRstrip;
    const auto set_rstrip = [&](std::string_view text, bool on) {
      const TokenId id = vocab->Find(text);
      if (id == kNoToken) return;
      if (on) {
        vocab->tokens[id].attrs |= token_attr::kRstrip;
      } else {
        vocab->tokens[id].attrs &= ~token_attr::kRstrip;
      }
    };
    set_rstrip("</s>", true);
    for (std::string_view text : {"<unk>", "<s>", "<|endoftext|>"}) set_rstrip(text, false);
  }
}

}  // namespace

std::string_view VocabTypeName(VocabType type) {
  return type == VocabType::kSpm ? "SPM" : "BPE";
}

TokenId Vocab::Find(std::string_view text) const {
  const auto it = token_to_id.find(text);
  return it == token_to_id.end() ? kNoToken : it->second;
}

int Vocab::MergeRank(std::string_view left, std::string_view right, std::string* scratch) const {
  scratch->assign(left);
  scratch->push_back(' ');
  scratch->append(right);
  const auto it = merge_ranks.find(std::string_view(*scratch));
  return it == merge_ranks.end() ? -1 : it->second;
}

TokenId Vocab::ByteToken(std::uint8_t b) const {
  if (type == VocabType::kBpe) return Find(ByteToUnicode(b));
  static constexpr char kHex[] = "0123456789ABCDEF";
  const char hex_text[6] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
  const TokenId id = Find(std::string_view(hex_text, sizeof(hex_text)));
  if (id != kNoToken) return id;
  const char raw = static_cast<char>(b);
  return Find(std::string_view(&raw, 1));
}

bool Vocab::IsEog(TokenId id) const {
  return std::binary_search(eog_ids.begin(), eog_ids.end(), id);
}

Result<Vocab> LoadVocab(const gguf::GgufFile& file) {
  Vocab vocab;
  SG_RETURN_IF_ERROR(InitModelType(file, &vocab));
  SG_RETURN_IF_ERROR(LoadTokens(file, &vocab));
  if (vocab.type == VocabType::kBpe) SG_RETURN_IF_ERROR(LoadMerges(file, &vocab));
  SG_ASSIGN_OR_RETURN(vocab.model_name, GetStringOr(file, "general.name"));
  SG_ASSIGN_OR_RETURN(vocab.chat_template, GetStringOr(file, "tokenizer.chat_template"));

  // Defaults that point past a small vocabulary mean "none".
  SpecialIds& sp = vocab.special;
  for (TokenId* id : {&sp.bos, &sp.eos, &sp.unk}) {
    if (!vocab.IsValid(*id)) *id = kNoToken;
  }
  SG_RETURN_IF_ERROR(LoadSpecialIds(file, &vocab));
  if (vocab.type == VocabType::kSpm) {
    sp.nl = vocab.ByteToken('\n');
    if (sp.nl == kNoToken) sp.nl = sp.pad;
  } else {
    sp.nl = vocab.Find(ByteToUnicode('\n'));
    if (sp.nl == kNoToken) sp.nl = sp.pad;
  }
  if (vocab.add_bos && sp.bos == kNoToken) {
    return InvalidArgument("tokenizer: add_bos_token is set but the vocabulary has no BOS token");
  }
  if (vocab.add_eos && sp.eos == kNoToken) {
    return InvalidArgument("tokenizer: add_eos_token is set but the vocabulary has no EOS token");
  }
  DetectSpecialsByText(&vocab);
  BuildSpecialTokenList(&vocab);
  return vocab;
}

}  // namespace smartgen::tokenizer
