#include "server/generation_setup.h"

#include <algorithm>

namespace smartgen::server {
namespace {

ApiError Unsupported(std::string_view field, std::string_view what) {
  return MakeApiError(400, fmt::format("'{}' is not supported by this deployment: {}", field, what),
                      "", std::string(field));
}

// The first field the backend would not honour, as a 400; nullopt when it honours them all.
std::optional<ApiError> CheckFeatures(const CompletionRequest& r, const BackendFeatures& f) {
  const model::SamplingParams& p = r.sampling;
  if (p.logprobs >= 0 && !f.logprobs) {
    return Unsupported("logprobs", "its backend does not report log-probabilities");
  }
  if (!f.logit_processing) {
    const char* field = nullptr;
    if (p.presence_penalty != 0)
      field = "presence_penalty";
    else if (p.frequency_penalty != 0)
      field = "frequency_penalty";
    else if (p.repetition_penalty != 1)
      field = "repetition_penalty";
    else if (p.min_p != 0)
      field = "min_p";
    else if (!p.logit_bias.empty())
      field = "logit_bias";
    if (field) return Unsupported(field, "its backend does not apply it");
  }
  if (r.ignore_eos && !f.ignore_eos) {
    return Unsupported("ignore_eos", "its backend does not apply it");
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> PrepareGeneration(const CompletionRequest& r,
                                          const CompletionBackend& backend, int default_max_tokens,
                                          std::uint64_t drawn_seed, std::string_view chat_template,
                                          PreparedGeneration* out) {
  GenerationRequest* g = &out->request;
  const tokenizer::Tokenizer& tok = backend.tokenizer();
  const char* prompt_field = "prompt";
  if (r.endpoint == Endpoint::kChatCompletions) {
    prompt_field = "messages";
    Result<std::string> text =
        tok.ApplyChatTemplate(r.messages, /*add_generation_prompt=*/true, chat_template);
    if (!text.ok()) {
      return MakeApiError(500, fmt::format("the model's chat template cannot be applied: {}",
                                           text.status().message()));
    }
    g->prompt = tok.Encode(*text, /*add_special=*/true, /*parse_special=*/true);
  } else if (r.prompt_is_tokens) {
    for (std::int32_t id : r.prompt_tokens) {
      if (id >= tok.n_vocab()) {
        return MakeApiError(400,
                            fmt::format("token id {} in 'prompt' is not in the vocabulary "
                                        "({} tokens)",
                                        id, tok.n_vocab()),
                            "", "prompt");
      }
    }
    g->prompt = r.prompt_tokens;
  } else {
    g->prompt = tok.Encode(r.prompt_text, /*add_special=*/true, /*parse_special=*/true);
  }
  if (g->prompt.empty()) return MakeApiError(400, "the prompt is empty", "", prompt_field);

  const std::int64_t ctx = backend.context_length();
  const auto n_prompt = static_cast<std::int64_t>(g->prompt.size());
  std::int64_t max_tokens = r.max_tokens.value_or(r.endpoint == Endpoint::kChatCompletions
                                                      ? std::max<std::int64_t>(ctx - n_prompt, 1)
                                                      : default_max_tokens);
  if (n_prompt + max_tokens > ctx) {
    const bool prompt_alone_too_long = n_prompt >= ctx;
    return MakeApiError(
        400,
        fmt::format("This model's maximum context length is {} tokens. However, you requested "
                    "{} tokens ({} in the {}, {} in the completion). Please reduce the length "
                    "of the {} or completion.",
                    ctx, n_prompt + max_tokens, n_prompt, prompt_field, max_tokens, prompt_field),
        "context_length_exceeded",
        prompt_alone_too_long || !r.max_tokens ? prompt_field : "max_tokens");
  }
  for (const auto& [id, bias] : r.sampling.logit_bias) {
    if (id >= tok.n_vocab()) {
      return MakeApiError(
          400,
          fmt::format("token id {} in 'logit_bias' is not in the vocabulary ({} tokens)", id,
                      tok.n_vocab()),
          "", "logit_bias");
    }
  }
  if (std::optional<ApiError> e = CheckFeatures(r, backend.features())) return e;
  g->max_tokens = static_cast<int>(max_tokens);
  g->sampling = r.sampling;
  if (!r.seed_given) g->sampling.seed = drawn_seed;
  g->n = r.n;
  g->ignore_eos = r.ignore_eos;
  g->transfer_mode = r.transfer_mode;
  g->extension = r.extension;
  if (r.echo) {
    out->echo = r.prompt_is_tokens ? tok.Decode(r.prompt_tokens) : r.prompt_text;
  }
  return std::nullopt;
}

}  // namespace smartgen::server
