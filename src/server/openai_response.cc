#include "server/openai_response.h"

namespace smartgen::server {
namespace {

using nlohmann::json;

bool IsChat(const ResponseHeader& h) {
  return h.endpoint == Endpoint::kChatCompletions;
}

json Base(const ResponseHeader& h, bool chunk) {
  const char* object =
      IsChat(h) ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return {{"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model}};
}

json FinishReason(std::string_view finish_reason) {
  return finish_reason.empty() ? json(nullptr) : json(std::string(finish_reason));
}

}  // namespace

json UsageJson(const Usage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
}

json CompletionResponse(const ResponseHeader& header, const std::vector<ChoiceBody>& choices,
                        const Usage& usage, const json& smartgen) {
  json r = Base(header, /*chunk=*/false);
  json list = json::array();
  for (std::size_t i = 0; i < choices.size(); ++i) {
    const ChoiceBody& c = choices[i];
    if (IsChat(header)) {
      list.push_back({{"index", i},
                      {"message", {{"role", "assistant"}, {"content", c.text}}},
                      {"logprobs", c.logprobs},
                      {"finish_reason", FinishReason(c.finish_reason)}});
    } else {
      list.push_back({{"text", c.text},
                      {"index", i},
                      {"logprobs", c.logprobs},
                      {"finish_reason", FinishReason(c.finish_reason)}});
    }
  }
  r["choices"] = std::move(list);
  r["usage"] = UsageJson(usage);
  if (!smartgen.is_null()) r["smartgen"] = smartgen;
  return r;
}

json CompletionResponse(const ResponseHeader& header, std::string_view text,
                        std::string_view finish_reason, const Usage& usage, const json& smartgen) {
  return CompletionResponse(
      header, {ChoiceBody{std::string(text), std::string(finish_reason), nullptr}}, usage,
      smartgen);
}

json ChoiceChunk(const ResponseHeader& header, std::string_view text,
                 std::string_view finish_reason, bool role_chunk, bool with_null_usage, int index,
                 const json& logprobs) {
  json r = Base(header, /*chunk=*/true);
  json choice;
  if (IsChat(header)) {
    json delta = json::object();
    if (role_chunk) {
      delta = {{"role", "assistant"}, {"content", std::string(text)}};
    } else if (!text.empty() || finish_reason.empty()) {
      delta = {{"content", std::string(text)}};
    }
    choice = {{"index", index},
              {"delta", std::move(delta)},
              {"logprobs", logprobs},
              {"finish_reason", FinishReason(finish_reason)}};
  } else {
    choice = {{"text", std::string(text)},
              {"index", index},
              {"logprobs", logprobs},
              {"finish_reason", FinishReason(finish_reason)}};
  }
  r["choices"] = json::array({std::move(choice)});
  if (with_null_usage) r["usage"] = nullptr;
  return r;
}

json UsageChunk(const ResponseHeader& header, const Usage& usage) {
  json r = Base(header, /*chunk=*/true);
  r["choices"] = json::array();
  r["usage"] = UsageJson(usage);
  return r;
}

json ModelCard(std::string_view model, std::int64_t created, std::int64_t context_length) {
  return {{"id", std::string(model)},
          {"object", "model"},
          {"created", created},
          {"owned_by", "smartgen"},
          {"max_model_len", context_length}};
}

json ModelList(const std::vector<std::string>& models, std::int64_t created,
               std::int64_t context_length) {
  json data = json::array();
  for (const std::string& m : models) data.push_back(ModelCard(m, created, context_length));
  return {{"object", "list"}, {"data", std::move(data)}};
}

json ModelList(std::string_view model, std::int64_t created, std::int64_t context_length) {
  return ModelList(std::vector<std::string>{std::string(model)}, created, context_length);
}

std::string DumpJson(const json& value) {
  return value.dump(-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace);
}

}  // namespace smartgen::server
