#include "node/common/generation_spec.h"

#include <cmath>
#include <limits>

#include "node/common/json_fields.h"

namespace smartgen::node {

using nlohmann::json;

json ToJson(const model::SamplingParams& v) {
  json j = {{"temperature", v.temperature}, {"top_k", v.top_k}, {"top_p", v.top_p},
            {"seed", v.seed}};
  // The rest only when set, so that a plain request's JSON stays as it was.
  if (v.min_p != 0) j["min_p"] = v.min_p;
  if (v.presence_penalty != 0) j["presence_penalty"] = v.presence_penalty;
  if (v.frequency_penalty != 0) j["frequency_penalty"] = v.frequency_penalty;
  if (v.repetition_penalty != 1) j["repetition_penalty"] = v.repetition_penalty;
  if (!v.logit_bias.empty()) {
    json bias = json::array();
    for (const auto& [token, b] : v.logit_bias) bias.push_back({token, b});
    j["logit_bias"] = std::move(bias);
  }
  if (v.logprobs >= 0) j["logprobs"] = v.logprobs;
  return j;
}

namespace {

// [[token id, bias], ...]
Status ParseLogitBiasPairs(const json& j, std::vector<std::pair<std::int32_t, float>>* out) {
  if (!j.is_array()) return InvalidArgument("sampling: logit_bias must be an array of pairs");
  for (const json& pair : j) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() ||
        !pair[1].is_number() || pair[0].get<std::int64_t>() < 0 ||
        pair[0].get<std::int64_t>() > std::numeric_limits<std::int32_t>::max()) {
      return InvalidArgument("sampling: logit_bias entries must be [token id, bias]");
    }
    out->emplace_back(pair[0].get<std::int32_t>(), pair[1].get<float>());
  }
  return Status::Ok();
}

}  // namespace

Result<model::SamplingParams> ParseSamplingParams(const json& j) {
  model::SamplingParams p;
  if (j.is_null()) return p;
  JsonFields f(j, "sampling");
  SG_RETURN_IF_ERROR(f.Check());
  SG_RETURN_IF_ERROR(f.Optional("temperature", &p.temperature));
  SG_RETURN_IF_ERROR(f.Optional("top_k", &p.top_k));
  SG_RETURN_IF_ERROR(f.Optional("top_p", &p.top_p));
  SG_RETURN_IF_ERROR(f.Optional("seed", &p.seed));
  SG_RETURN_IF_ERROR(f.Optional("min_p", &p.min_p));
  SG_RETURN_IF_ERROR(f.Optional("presence_penalty", &p.presence_penalty));
  SG_RETURN_IF_ERROR(f.Optional("frequency_penalty", &p.frequency_penalty));
  SG_RETURN_IF_ERROR(f.Optional("repetition_penalty", &p.repetition_penalty));
  SG_RETURN_IF_ERROR(f.Optional("logprobs", &p.logprobs));
  if (j.contains("logit_bias")) {
    SG_RETURN_IF_ERROR(ParseLogitBiasPairs(j["logit_bias"], &p.logit_bias));
  }
  if (p.temperature < 0 || p.top_p <= 0 || p.top_p > 1 || p.top_k < 0) {
    return InvalidArgument("sampling: temperature {} top_p {} top_k {} out of range",
                           p.temperature, p.top_p, p.top_k);
  }
  if (!(p.min_p >= 0 && p.min_p <= 1) || !(p.repetition_penalty > 0) ||
      !std::isfinite(p.presence_penalty) || !std::isfinite(p.frequency_penalty) ||
      !std::isfinite(p.repetition_penalty) || p.logprobs < -1 ||
      p.logprobs > model::kMaxTopLogprobs) {
    return InvalidArgument(
        "sampling: min_p {} repetition_penalty {} presence {} frequency {} logprobs {} out of "
        "range",
        p.min_p, p.repetition_penalty, p.presence_penalty, p.frequency_penalty, p.logprobs);
  }
  return p;
}

json ToJson(const GenerationSpec& v) {
  json j = {{"prompt", v.prompt}, {"max_tokens", v.max_tokens}, {"sampling", ToJson(v.sampling)},
            {"stop_at_eog", v.stop_at_eog}, {"options", v.options}};
  if (!v.forced_tokens.empty()) j["forced_tokens"] = v.forced_tokens;
  if (v.n != 1) j["n"] = v.n;
  return j;
}

Result<GenerationSpec> ParseGenerationSpec(const json& j, const char* what) {
  GenerationSpec v;
  JsonFields f(j, what);
  SG_RETURN_IF_ERROR(f.Check());
  SG_RETURN_IF_ERROR(f.Required("prompt", &v.prompt));
  if (v.prompt.empty()) return InvalidArgument("{}: empty prompt", what);
  SG_RETURN_IF_ERROR(f.Required("max_tokens", &v.max_tokens));
  if (v.max_tokens < 1) return InvalidArgument("{}: max_tokens {} < 1", what, v.max_tokens);
  if (j.contains("sampling")) {
    SG_ASSIGN_OR_RETURN(v.sampling, ParseSamplingParams(j["sampling"]));
  }
  SG_RETURN_IF_ERROR(f.Optional("stop_at_eog", &v.stop_at_eog));
  SG_RETURN_IF_ERROR(f.Optional("forced_tokens", &v.forced_tokens));
  if (static_cast<std::int64_t>(v.forced_tokens.size()) > v.max_tokens) {
    return InvalidArgument("{}: {} forced tokens for max_tokens {}", what, v.forced_tokens.size(),
                           v.max_tokens);
  }
  for (std::int32_t t : v.forced_tokens) {
    if (t < 0) return InvalidArgument("{}: forced token {} is negative", what, t);
  }
  SG_RETURN_IF_ERROR(f.Optional("options", &v.options));
  SG_RETURN_IF_ERROR(f.Optional("n", &v.n));
  if (v.n < 1 || v.n > kMaxChoices) {
    return InvalidArgument("{}: n {} is outside [1, {}]", what, v.n, kMaxChoices);
  }
  if (v.n > 1 && v.teacher_forced()) {
    return InvalidArgument("{}: teacher forcing (forced_tokens) takes one choice, not n = {}", what,
                           v.n);
  }
  return v;
}

}  // namespace smartgen::node
