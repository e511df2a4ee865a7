#include "server/openai_request.h"

#include <cmath>
#include <limits>

#include "server/completion_backend.h"

namespace smartgen::server {
namespace {

using nlohmann::json;

// Validation state: the first error wins and records the field it is about.
class Checker {
 public:
  explicit Checker(std::string* param) : param_(param) {}

  Status Fail(std::string_view field, std::string message) {
    if (param_) *param_ = std::string(field);
    return Status(StatusCode::kInvalidArgument, std::move(message));
  }
  Status WrongType(std::string_view field, std::string_view expected, const json& value) {
    return Fail(field, fmt::format("'{}' must be {}, not {}", field, expected, value.type_name()));
  }

 private:
  std::string* param_;
};

// The value of `key`, or nullptr when absent or null.
const json* Field(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

Status GetBool(Checker& c, const json& object, const char* key, bool* out) {
  const json* v = Field(object, key);
  if (!v) return Status::Ok();
  if (!v->is_boolean()) return c.WrongType(key, "a boolean", *v);
  *out = v->get<bool>();
  return Status::Ok();
}

Status GetNumber(Checker& c, const json& object, const char* key, std::optional<double>* out) {
  const json* v = Field(object, key);
  if (!v) return Status::Ok();
  if (!v->is_number()) return c.WrongType(key, "a number", *v);
  const double d = v->get<double>();
  if (!std::isfinite(d)) return c.Fail(key, fmt::format("'{}' must be finite", key));
  *out = d;
  return Status::Ok();
}

Status GetInt(Checker& c, const json& object, const char* key, std::optional<std::int64_t>* out) {
  const json* v = Field(object, key);
  if (!v) return Status::Ok();
  if (v->is_number_unsigned()) {
    if (v->get<std::uint64_t>() >
        static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return c.Fail(key, fmt::format("'{}' is out of range", key));
    }
    *out = static_cast<std::int64_t>(v->get<std::uint64_t>());
    return Status::Ok();
  }
  if (!v->is_number_integer()) return c.WrongType(key, "an integer", *v);
  *out = v->get<std::int64_t>();
  return Status::Ok();
}

Status GetString(Checker& c, const json& object, const char* key, std::string* out) {
  const json* v = Field(object, key);
  if (!v) return Status::Ok();
  if (!v->is_string()) return c.WrongType(key, "a string", *v);
  *out = v->get<std::string>();
  return Status::Ok();
}

// A token id array; `field` names it in errors.
Status GetTokenArray(Checker& c, const json& array, std::string_view field,
                     std::vector<std::int32_t>* out) {
  out->clear();
  out->reserve(array.size());
  for (const json& t : array) {
    if (!t.is_number_integer()) {
      return c.Fail(field,
                    fmt::format("'{}' must hold integer token ids, not {}", field, t.type_name()));
    }
    const std::int64_t id =
        t.is_number_unsigned()
            ? static_cast<std::int64_t>(std::min<std::uint64_t>(t.get<std::uint64_t>(), 1ull << 40))
            : t.get<std::int64_t>();
    if (id < 0 || id > std::numeric_limits<std::int32_t>::max()) {
      return c.Fail(field, fmt::format("token id {} in '{}' is out of range", id, field));
    }
    out->push_back(static_cast<std::int32_t>(id));
  }
  return Status::Ok();
}

bool IsTokenArray(const json& v) {
  if (!v.is_array() || v.empty()) return false;
  return v.front().is_number();
}

Status ParsePrompt(Checker& c, const json& body, CompletionRequest* r) {
  const json* v = Field(body, "prompt");
  if (!v) return c.Fail("prompt", "'prompt' is required");
  if (v->is_string()) {
    r->prompt_text = v->get<std::string>();
    return Status::Ok();
  }
  if (!v->is_array()) {
    return c.WrongType("prompt", "a string, an array of token ids, or an array of one of those",
                       *v);
  }
  if (v->empty()) return c.Fail("prompt", "'prompt' is empty");
  if (IsTokenArray(*v)) {
    r->prompt_is_tokens = true;
    return GetTokenArray(c, *v, "prompt", &r->prompt_tokens);
  }
  if (v->size() > 1) {
    return c.Fail("prompt", "batched prompts are not supported: send one prompt per request");
  }
  const json& only = v->front();
  if (only.is_string()) {
    r->prompt_text = only.get<std::string>();
    return Status::Ok();
  }
  if (only.is_array() && !only.empty()) {
    r->prompt_is_tokens = true;
    return GetTokenArray(c, only, "prompt", &r->prompt_tokens);
  }
  return c.WrongType("prompt", "a string, an array of token ids, or an array of one of those",
                     only);
}

Status ParseContent(Checker& c, const json& message, std::string* content) {
  const json* v = Field(message, "content");
  if (!v) return Status::Ok();  // e.g. an assistant turn that only had tool calls
  if (v->is_string()) {
    *content = v->get<std::string>();
    return Status::Ok();
  }
  if (!v->is_array()) return c.WrongType("messages.content", "a string or an array of parts", *v);
  for (const json& part : *v) {
    if (!part.is_object()) return c.WrongType("messages.content", "an array of objects", part);
    const json* type = Field(part, "type");
    if (!type || !type->is_string() || type->get<std::string>() != "text") {
      return c.Fail("messages.content", "only content parts of type 'text' are supported");
    }
    const json* text = Field(part, "text");
    if (!text || !text->is_string()) {
      return c.Fail("messages.content", "a 'text' content part needs a string 'text'");
    }
    *content += text->get<std::string>();
  }
  return Status::Ok();
}

Status ParseMessages(Checker& c, const json& body, CompletionRequest* r) {
  const json* v = Field(body, "messages");
  if (!v) return c.Fail("messages", "'messages' is required");
  if (!v->is_array()) return c.WrongType("messages", "an array", *v);
  if (v->empty()) return c.Fail("messages", "'messages' is empty");
  for (const json& m : *v) {
    if (!m.is_object()) return c.WrongType("messages", "an array of objects", m);
    tokenizer::ChatMessage message;
    const json* role = Field(m, "role");
    if (!role) return c.Fail("messages.role", "every message needs a 'role'");
    if (!role->is_string()) return c.WrongType("messages.role", "a string", *role);
    message.role = role->get<std::string>();
    if (message.role == "developer") message.role = "system";
    if (message.role != "system" && message.role != "user" && message.role != "assistant" &&
        message.role != "tool") {
      return c.Fail("messages.role", fmt::format("unknown role '{}' (system, developer, user, "
                                                 "assistant or tool)",
                                                 message.role));
    }
    SG_RETURN_IF_ERROR(ParseContent(c, m, &message.content));
    r->messages.push_back(std::move(message));
  }
  return Status::Ok();
}

Status ParseStop(Checker& c, const json& body, CompletionRequest* r) {
  const json* v = Field(body, "stop");
  if (!v) return Status::Ok();
  std::vector<const json*> items;
  if (v->is_string()) {
    items.push_back(v);
  } else if (v->is_array()) {
    for (const json& s : *v) items.push_back(&s);
  } else {
    return c.WrongType("stop", "a string or an array of strings", *v);
  }
  if (items.size() > static_cast<std::size_t>(kMaxStopSequences)) {
    return c.Fail("stop", fmt::format("at most {} stop sequences", kMaxStopSequences));
  }
  for (const json* s : items) {
    if (!s->is_string()) return c.WrongType("stop", "a string or an array of strings", *s);
    std::string text = s->get<std::string>();
    if (text.empty()) return c.Fail("stop", "stop sequences must not be empty");
    if (text.size() > kMaxStopBytes) {
      return c.Fail("stop", fmt::format("stop sequences are limited to {} bytes", kMaxStopBytes));
    }
    r->stop.push_back(std::move(text));
  }
  return Status::Ok();
}

Status ParseSampling(Checker& c, const json& body, CompletionRequest* r) {
  std::optional<double> temperature, top_p;
  std::optional<std::int64_t> top_k, seed;
  SG_RETURN_IF_ERROR(GetNumber(c, body, "temperature", &temperature));
  SG_RETURN_IF_ERROR(GetNumber(c, body, "top_p", &top_p));
  SG_RETURN_IF_ERROR(GetInt(c, body, "top_k", &top_k));
  SG_RETURN_IF_ERROR(GetInt(c, body, "seed", &seed));
  r->sampling.temperature = 1.0f;
  if (temperature) {
    if (*temperature < 0 || *temperature > 2) {
      return c.Fail("temperature", "'temperature' must be between 0 and 2");
    }
    r->sampling.temperature = static_cast<float>(*temperature);
  }
  if (top_p) {
    if (!(*top_p > 0) || *top_p > 1) return c.Fail("top_p", "'top_p' must be in (0, 1]");
    r->sampling.top_p = static_cast<float>(*top_p);
  }
  if (top_k) {
    if (*top_k < -1 || *top_k > std::numeric_limits<int>::max()) {
      return c.Fail("top_k", "'top_k' must be -1, 0 (off) or a positive integer");
    }
    r->sampling.top_k = *top_k < 0 ? 0 : static_cast<int>(*top_k);
  }
  if (seed) {
    r->sampling.seed = static_cast<std::uint64_t>(*seed);
    r->seed_given = true;
  }
  return Status::Ok();
}

Status ParseMaxTokens(Checker& c, const json& body, CompletionRequest* r) {
  std::optional<std::int64_t> max_tokens, max_completion_tokens;
  SG_RETURN_IF_ERROR(GetInt(c, body, "max_tokens", &max_tokens));
  const char* field = "max_tokens";
  if (r->endpoint == Endpoint::kChatCompletions) {
    SG_RETURN_IF_ERROR(GetInt(c, body, "max_completion_tokens", &max_completion_tokens));
    if (max_completion_tokens) {
      max_tokens = max_completion_tokens;
      field = "max_completion_tokens";
    }
  }
  if (!max_tokens) return Status::Ok();
  if (*max_tokens < 1 || *max_tokens > std::numeric_limits<int>::max()) {
    return c.Fail(field, fmt::format("'{}' must be a positive integer", field));
  }
  r->max_tokens = static_cast<int>(*max_tokens);
  return Status::Ok();
}

// A number field within [lo, hi] (both inclusive unless `lo_open`), written to `*out`.
Status GetBounded(Checker& c, const json& body, const char* key, double lo, double hi,
                  bool lo_open, float* out) {
  std::optional<double> v;
  SG_RETURN_IF_ERROR(GetNumber(c, body, key, &v));
  if (!v) return Status::Ok();
  if ((lo_open ? !(*v > lo) : !(*v >= lo)) || *v > hi) {
    return c.Fail(key, fmt::format("'{}' must be in {}{}, {}]", key, lo_open ? "(" : "[", lo, hi));
  }
  *out = static_cast<float>(*v);
  return Status::Ok();
}

Status ParseLogitBias(Checker& c, const json& body, CompletionRequest* r) {
  const json* v = Field(body, "logit_bias");
  if (!v) return Status::Ok();
  if (!v->is_object()) return c.WrongType("logit_bias", "an object", *v);
  if (v->size() > kMaxLogitBias) {
    return c.Fail("logit_bias", fmt::format("'logit_bias' takes at most {} tokens", kMaxLogitBias));
  }
  for (const auto& [key, bias] : v->items()) {
    std::int64_t id = -1;
    const bool digits = !key.empty() && key.size() <= 10 &&
                        key.find_first_not_of("0123456789") == std::string::npos;
    if (digits) id = std::stoll(key);
    if (!digits || id > std::numeric_limits<std::int32_t>::max()) {
      return c.Fail("logit_bias",
                    fmt::format("'logit_bias' keys must be token ids, not '{}'", key));
    }
    if (!bias.is_number()) return c.WrongType("logit_bias", "an object of numbers", bias);
    const double b = bias.get<double>();
    if (!(b >= -100 && b <= 100)) {
      return c.Fail("logit_bias", "'logit_bias' values must be in [-100, 100]");
    }
    r->sampling.logit_bias.emplace_back(static_cast<std::int32_t>(id), static_cast<float>(b));
  }
  return Status::Ok();
}

Status ParseLogprobs(Checker& c, const json& body, CompletionRequest* r) {
  std::optional<std::int64_t> top;
  if (r->endpoint == Endpoint::kCompletions) {
    SG_RETURN_IF_ERROR(GetInt(c, body, "logprobs", &top));
    if (!top) return Status::Ok();
    if (*top < 0 || *top > model::kMaxTopLogprobs) {
      return c.Fail("logprobs",
                    fmt::format("'logprobs' must be between 0 and {}", model::kMaxTopLogprobs));
    }
    r->sampling.logprobs = static_cast<int>(*top);
    return Status::Ok();
  }
  bool wanted = false;
  SG_RETURN_IF_ERROR(GetBool(c, body, "logprobs", &wanted));
  SG_RETURN_IF_ERROR(GetInt(c, body, "top_logprobs", &top));
  if (top && (*top < 0 || *top > model::kMaxTopLogprobs)) {
    return c.Fail("top_logprobs",
                  fmt::format("'top_logprobs' must be between 0 and {}", model::kMaxTopLogprobs));
  }
  if (top && !wanted) {
    return c.Fail("top_logprobs", "'top_logprobs' needs 'logprobs' to be true");
  }
  if (wanted) r->sampling.logprobs = top ? static_cast<int>(*top) : 0;
  return Status::Ok();
}

// The fields beyond the basic sampling ones: n, penalties, min_p, logit_bias, logprobs, echo,
// ignore_eos.
Status ParseExtras(Checker& c, const json& body, CompletionRequest* r) {
  std::optional<std::int64_t> n;
  SG_RETURN_IF_ERROR(GetInt(c, body, "n", &n));
  if (n) {
    if (*n < 1 || *n > kMaxChoices) {
      return c.Fail("n", fmt::format("'n' must be between 1 and {}", kMaxChoices));
    }
    r->n = static_cast<int>(*n);
  }
  model::SamplingParams& p = r->sampling;
  SG_RETURN_IF_ERROR(GetBounded(c, body, "presence_penalty", -2, 2, false, &p.presence_penalty));
  SG_RETURN_IF_ERROR(GetBounded(c, body, "frequency_penalty", -2, 2, false, &p.frequency_penalty));
  SG_RETURN_IF_ERROR(
      GetBounded(c, body, "repetition_penalty", 0, 10, true, &p.repetition_penalty));
  SG_RETURN_IF_ERROR(GetBounded(c, body, "min_p", 0, 1, false, &p.min_p));
  SG_RETURN_IF_ERROR(ParseLogitBias(c, body, r));
  SG_RETURN_IF_ERROR(ParseLogprobs(c, body, r));
  SG_RETURN_IF_ERROR(GetBool(c, body, "ignore_eos", &r->ignore_eos));
  if (r->endpoint == Endpoint::kCompletions) {
    SG_RETURN_IF_ERROR(GetBool(c, body, "echo", &r->echo));
    if (r->echo && r->sampling.logprobs >= 0) {
      return c.Fail("logprobs",
                    "'logprobs' with 'echo' (the prompt's log-probabilities) is not supported");
    }
  }
  return Status::Ok();
}

// Known OpenAI (and vLLM) fields asking for features this server does not have.
Status RejectUnsupported(Checker& c, const json& body, const CompletionRequest& r) {
  std::optional<std::int64_t> best_of, min_tokens;
  SG_RETURN_IF_ERROR(GetInt(c, body, "best_of", &best_of));
  if (best_of && *best_of != 1 && *best_of != r.n) {
    return c.Fail("best_of", "only best_of = 1 (or = n) is supported");
  }
  if (r.endpoint == Endpoint::kChatCompletions) {
    bool echo = false;
    SG_RETURN_IF_ERROR(GetBool(c, body, "echo", &echo));
    if (echo) return c.Fail("echo", "'echo' is for completions only");
  }
  std::string suffix;
  SG_RETURN_IF_ERROR(GetString(c, body, "suffix", &suffix));
  if (!suffix.empty()) return c.Fail("suffix", "'suffix' is not supported");
  for (const char* key : {"tools", "functions", "stop_token_ids"}) {
    if (const json* v = Field(body, key)) {
      if (!v->is_array()) return c.WrongType(key, "an array", *v);
      if (!v->empty()) return c.Fail(key, fmt::format("'{}' is not supported", key));
    }
  }
  for (const char* key : {"tool_choice", "function_call"}) {
    if (const json* v = Field(body, key); v && !(v->is_string() && *v == "none")) {
      return c.Fail(key, fmt::format("'{}' is not supported (no tools)", key));
    }
  }
  for (const char* key : {"prompt_logprobs", "guided_json", "guided_regex", "guided_choice",
                          "guided_grammar", "prediction", "audio"}) {
    if (Field(body, key)) return c.Fail(key, fmt::format("'{}' is not supported", key));
  }
  bool beam = false;
  SG_RETURN_IF_ERROR(GetBool(c, body, "use_beam_search", &beam));
  if (beam) return c.Fail("use_beam_search", "beam search is not supported");
  // vLLM's output switches: only their defaults are what this server does.
  for (const auto& [key, supported] : {std::pair{"include_stop_str_in_output", false},
                                       std::pair{"skip_special_tokens", true},
                                       std::pair{"echo_special_tokens", false}}) {
    bool value = supported;
    SG_RETURN_IF_ERROR(GetBool(c, body, key, &value));
    if (value != supported) {
      return c.Fail(key, fmt::format("only '{}': {} is supported", key, supported));
    }
  }
  for (const char* key : {"bad_words", "allowed_token_ids"}) {
    if (const json* v = Field(body, key)) {
      if (!v->is_array()) return c.WrongType(key, "an array", *v);
      if (!v->empty()) return c.Fail(key, fmt::format("'{}' is not supported", key));
    }
  }
  if (Field(body, "truncate_prompt_tokens")) {
    return c.Fail("truncate_prompt_tokens", "'truncate_prompt_tokens' is not supported");
  }
  SG_RETURN_IF_ERROR(GetInt(c, body, "min_tokens", &min_tokens));
  if (min_tokens && *min_tokens != 0) return c.Fail("min_tokens", "'min_tokens' is not supported");
  if (const json* v = Field(body, "modalities")) {
    if (!v->is_array()) return c.WrongType("modalities", "an array", *v);
    for (const json& m : *v) {
      if (!(m.is_string() && m == "text")) {
        return c.Fail("modalities", "only the 'text' modality is supported");
      }
    }
  }
  if (const json* v = Field(body, "response_format")) {
    if (!v->is_object()) return c.WrongType("response_format", "an object", *v);
    const json* type = Field(*v, "type");
    if (type && (!type->is_string() || type->get<std::string>() != "text")) {
      return c.Fail("response_format", "only response_format type 'text' is supported");
    }
  }
  return Status::Ok();
}

Status ParseStreaming(Checker& c, const json& body, CompletionRequest* r) {
  SG_RETURN_IF_ERROR(GetBool(c, body, "stream", &r->stream));
  const json* options = Field(body, "stream_options");
  if (!options) return Status::Ok();
  if (!options->is_object()) return c.WrongType("stream_options", "an object", *options);
  if (!r->stream) {
    return c.Fail("stream_options", "'stream_options' is only allowed when 'stream' is true");
  }
  const json* usage = Field(*options, "include_usage");
  if (usage) {
    if (!usage->is_boolean()) {
      return c.WrongType("stream_options.include_usage", "a boolean", *usage);
    }
    r->include_usage = usage->get<bool>();
  }
  return Status::Ok();
}

Status ParseExtension(Checker& c, const json& body, CompletionRequest* r) {
  const json* ext = Field(body, "smartgen");
  if (!ext) return Status::Ok();
  if (!ext->is_object()) return c.WrongType("smartgen", "an object", *ext);
  r->extension = *ext;
  if (const json* mode = Field(*ext, "mode")) {
    if (!mode->is_string()) return c.WrongType("smartgen.mode", "a string", *mode);
    r->transfer_mode = mode->get<std::string>();
    bool known = false;
    for (const char* m : kTransferModes) known = known || r->transfer_mode == m;
    if (!known) {
      return c.Fail("smartgen.mode",
                    fmt::format("unknown transfer mode '{}' (colocated, full, layerwise, "
                                "smartgen or auto)",
                                r->transfer_mode));
    }
  }
  if (const json* ids = Field(*ext, "return_token_ids")) {
    if (!ids->is_boolean()) return c.WrongType("smartgen.return_token_ids", "a boolean", *ids);
    r->return_token_ids = ids->get<bool>();
  }
  return Status::Ok();
}

}  // namespace

std::string_view EndpointName(Endpoint endpoint) {
  return endpoint == Endpoint::kChatCompletions ? "chat_completions" : "completions";
}

Result<CompletionRequest> ParseCompletionRequest(std::string_view body, Endpoint endpoint,
                                                 std::string* error_param) {
  Checker c(error_param);
  if (error_param) error_param->clear();
  // No exceptions: a parse failure yields a `discarded` value. Invalid UTF-8 in strings is a
  // parse error, so every string below is valid UTF-8.
  const json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return c.Fail("", "the request body is not valid JSON");
  }
  if (!doc.is_object()) return c.Fail("", "the request body must be a JSON object");

  CompletionRequest r;
  r.endpoint = endpoint;
  SG_RETURN_IF_ERROR(GetString(c, doc, "model", &r.model));
  if (endpoint == Endpoint::kCompletions) {
    SG_RETURN_IF_ERROR(ParsePrompt(c, doc, &r));
  } else {
    SG_RETURN_IF_ERROR(ParseMessages(c, doc, &r));
  }
  SG_RETURN_IF_ERROR(ParseMaxTokens(c, doc, &r));
  SG_RETURN_IF_ERROR(ParseSampling(c, doc, &r));
  SG_RETURN_IF_ERROR(ParseStop(c, doc, &r));
  SG_RETURN_IF_ERROR(ParseStreaming(c, doc, &r));
  SG_RETURN_IF_ERROR(ParseExtras(c, doc, &r));
  SG_RETURN_IF_ERROR(RejectUnsupported(c, doc, r));
  SG_RETURN_IF_ERROR(ParseExtension(c, doc, &r));
  std::string user;
  SG_RETURN_IF_ERROR(GetString(c, doc, "user", &user));  // accepted and unused
  return r;
}

}  // namespace smartgen::server
