#include "select/prompt_set.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "core/mapped_file.h"
#include "model/sampler.h"

namespace smartgen::select {

Result<std::vector<EvalPrompt>> ParsePrompts(std::string_view text,
                                             const tokenizer::Tokenizer& tok) {
  std::vector<EvalPrompt> out;
  std::size_t line_no = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    EvalPrompt p;
    if (line.front() == '{') {
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || !j.is_object()) {
        return InvalidArgument("prompts line {}: malformed JSON", line_no);
      }
      if (j.contains("tokens") && j["tokens"].is_array()) {
        for (const auto& t : j["tokens"]) {
          if (!t.is_number_integer() || t.get<std::int64_t>() < 0 ||
              t.get<std::int64_t>() >= tok.n_vocab()) {
            return InvalidArgument("prompts line {}: token {} is not an id below {}", line_no,
                                   t.dump(), tok.n_vocab());
          }
          p.tokens.push_back(t.get<std::int32_t>());
        }
      } else if (j.contains("text") && j["text"].is_string()) {
        p.tokens =
            tok.Encode(j["text"].get<std::string>(), /*add_special=*/true, /*parse_special=*/false);
      } else {
        return InvalidArgument("prompts line {}: needs \"text\" or \"tokens\"", line_no);
      }
      if (j.contains("answer") && j["answer"].is_number_integer())
        p.answer = j["answer"].get<std::int32_t>();
      if (j.contains("needle_pos") && j["needle_pos"].is_number_integer()) {
        p.needle_pos = j["needle_pos"].get<std::int64_t>();
      }
      if (j.contains("label") && j["label"].is_string()) p.label = j["label"].get<std::string>();
    } else {
      p.tokens = tok.Encode(line, /*add_special=*/true, /*parse_special=*/false);
    }
    if (p.tokens.empty()) return InvalidArgument("prompts line {}: empty prompt", line_no);
    if (p.label.empty()) p.label = fmt::format("line {}", line_no);
    out.push_back(std::move(p));
  }
  if (out.empty()) return InvalidArgument("no prompts found");
  return out;
}

Result<std::vector<EvalPrompt>> ReadPrompts(const std::string& path,
                                            const tokenizer::Tokenizer& tok) {
  SG_ASSIGN_OR_RETURN(const std::string text, core::ReadFileToString(path));
  Result<std::vector<EvalPrompt>> r = ParsePrompts(text, tok);
  if (!r.ok()) return r.status().WithContext(path);
  return r;
}

std::string PromptsToJsonl(std::span<const EvalPrompt> prompts) {
  std::string out;
  for (const EvalPrompt& p : prompts) {
    nlohmann::json j;
    if (!p.label.empty()) j["label"] = p.label;
    if (p.answer >= 0) j["answer"] = p.answer;
    if (p.needle_pos >= 0) j["needle_pos"] = p.needle_pos;
    j["tokens"] = p.tokens;
    out += j.dump() + "\n";
  }
  return out;
}

Status ExtendPrompts(model::Forward& forward, kv::BlockPool& blocks, const ExtendOptions& o,
                     std::vector<EvalPrompt>* prompts) {
  if (o.min_tokens < 1 || o.max_tokens < o.min_tokens) {
    return InvalidArgument("prompt length range [{}, {}] is empty", o.min_tokens, o.max_tokens);
  }
  const tokenizer::Tokenizer& tok = forward.model().tokenizer();
  std::mt19937_64 rng(o.seed);
  std::vector<float> logits;
  for (std::size_t i = 0; i < prompts->size(); ++i) {
    EvalPrompt& p = (*prompts)[i];
    const std::int64_t target =
        std::uniform_int_distribution<std::int64_t>(o.min_tokens, o.max_tokens)(rng);
    if (std::ssize(p.tokens) >= target) {
      p.tokens.resize(target);
      continue;
    }
    kv::SequenceKv seq(&blocks);
    model::Sampler sampler({o.temperature, 0, 1.0f, o.seed * 1000003 + i});
    std::span<const std::int32_t> feed = p.tokens;
    std::int32_t next = 0;
    while (true) {
      SG_RETURN_IF_ERROR(forward.RunOne(&seq, feed, &logits));
      for (std::int32_t e : tok.eog_ids()) logits[e] = -std::numeric_limits<float>::infinity();
      next = sampler.Sample(logits);
      p.tokens.push_back(next);
      if (std::ssize(p.tokens) >= target) break;
      feed = std::span<const std::int32_t>(&p.tokens.back(), 1);
    }
  }
  return Status::Ok();
}

Result<std::vector<EvalPrompt>> MakeKvRetrievalPrompts(const tokenizer::Tokenizer& tok,
                                                       std::int64_t n_tokens, int n_prompts,
                                                       std::uint64_t seed) {
  constexpr int kKeys = 64, kValuesPerKey = 8, kFillers = 32;
  if (n_tokens < 64) return InvalidArgument("kv-retrieval prompts need at least 64 tokens");
  auto find = [&](const std::string& text) -> Result<std::int32_t> {
    const std::int32_t id = tok.FindToken(text);
    if (id < 0)
      return NotFound("token '{}' is not in the vocabulary (not a kv-retrieval model?)", text);
    return id;
  };
  SG_ASSIGN_OR_RETURN(const std::int32_t q_id, find("<q>"));
  std::vector<std::int32_t> keys(kKeys), fillers(kFillers), values(kKeys * kValuesPerKey);
  for (int k = 0; k < kKeys; ++k) {
    SG_ASSIGN_OR_RETURN(keys[k], find(fmt::format("<k{}>", k)));
    for (int j = 0; j < kValuesPerKey; ++j) {
      SG_ASSIGN_OR_RETURN(values[k * kValuesPerKey + j], find(fmt::format("<v{}_{}>", k, j)));
    }
  }
  for (int f = 0; f < kFillers; ++f) {
    SG_ASSIGN_OR_RETURN(fillers[f], find(fmt::format("<f{}>", f)));
  }
  const std::int32_t bos = tok.bos_id() >= 0 ? tok.bos_id() : 0;

  std::mt19937_64 rng(seed);
  std::vector<EvalPrompt> out;
  for (int i = 0; i < n_prompts; ++i) {
    EvalPrompt p;
    p.tokens.assign(n_tokens, 0);
    p.tokens[0] = bos;
    const std::int64_t body = n_tokens - 3;  // positions 1 .. n_tokens - 3 (then <q> <kK>)
    for (std::int64_t t = 1; t <= body; ++t) p.tokens[t] = fillers[rng() % kFillers];
    const int n_pairs = 8 + static_cast<int>(rng() % 17);
    // Distinct keys and non-overlapping pair slots: slot s covers positions 1+2s, 2+2s.
    std::vector<int> key_ids(kKeys);
    for (int k = 0; k < kKeys; ++k) key_ids[k] = k;
    std::shuffle(key_ids.begin(), key_ids.end(), rng);
    std::vector<std::int64_t> slots(body / 2);
    for (std::size_t s = 0; s < slots.size(); ++s) slots[s] = static_cast<std::int64_t>(s);
    std::shuffle(slots.begin(), slots.end(), rng);
    const int query = static_cast<int>(rng() % n_pairs);
    for (int j = 0; j < n_pairs; ++j) {
      const std::int64_t pos = 1 + 2 * slots[j];
      const int key = key_ids[j];
      const std::int32_t value =
          values[key * kValuesPerKey + static_cast<int>(rng() % kValuesPerKey)];
      p.tokens[pos] = keys[key];
      p.tokens[pos + 1] = value;
      if (j == query) {
        p.answer = value;
        p.needle_pos = pos + 1;
        p.tokens[n_tokens - 1] = keys[key];
      }
    }
    p.tokens[n_tokens - 2] = q_id;
    p.label = fmt::format("kv{}-{}", n_tokens, i);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace smartgen::select
