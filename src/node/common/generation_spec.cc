#include "node/common/generation_spec.h"

#include "node/common/json_fields.h"

namespace smartgen::node {

using nlohmann::json;

json ToJson(const model::SamplingParams& v) {
  return {{"temperature", v.temperature}, {"top_k", v.top_k}, {"top_p", v.top_p},
          {"seed", v.seed}};
}

Result<model::SamplingParams> ParseSamplingParams(const json& j) {
  model::SamplingParams p;
  if (j.is_null()) return p;
  JsonFields f(j, "sampling");
  SG_RETURN_IF_ERROR(f.Check());
  SG_RETURN_IF_ERROR(f.Optional("temperature", &p.temperature));
  SG_RETURN_IF_ERROR(f.Optional("top_k", &p.top_k));
  SG_RETURN_IF_ERROR(f.Optional("top_p", &p.top_p));
  SG_RETURN_IF_ERROR(f.Optional("seed", &p.seed));
  if (p.temperature < 0 || p.top_p <= 0 || p.top_p > 1 || p.top_k < 0) {
    return InvalidArgument("sampling: temperature {} top_p {} top_k {} out of range",
                           p.temperature, p.top_p, p.top_k);
  }
  return p;
}

json ToJson(const GenerationSpec& v) {
  json j = {{"prompt", v.prompt}, {"max_tokens", v.max_tokens}, {"sampling", ToJson(v.sampling)},
            {"stop_at_eog", v.stop_at_eog}, {"options", v.options}};
  if (!v.forced_tokens.empty()) j["forced_tokens"] = v.forced_tokens;
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
  return v;
}

}  // namespace smartgen::node
