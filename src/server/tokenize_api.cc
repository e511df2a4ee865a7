#include "server/tokenize_api.h"

#include <vector>

#include "server/openai_request.h"

namespace smartgen::server {
namespace {

using nlohmann::json;

Status Fail(std::string* param, std::string_view field, std::string message) {
  if (param) *param = std::string(field);
  return InvalidArgument("{}", message);
}

Result<json> ParseObject(std::string_view body, std::string* param) {
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Fail(param, "", "the request body is not valid JSON");
  if (!doc.is_object()) return Fail(param, "", "the request body must be a JSON object");
  return doc;
}

// An optional boolean field (null = absent).
Status GetFlag(const json& doc, const char* key, bool* out, std::string* param) {
  const auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return Status::Ok();
  if (!it->is_boolean()) return Fail(param, key, fmt::format("'{}' must be a boolean", key));
  *out = it->get<bool>();
  return Status::Ok();
}

Status GetModel(const json& doc, std::string* model, std::string* param) {
  model->clear();
  const auto it = doc.find("model");
  if (it == doc.end() || it->is_null()) return Status::Ok();
  if (!it->is_string()) return Fail(param, "model", "'model' must be a string");
  *model = it->get<std::string>();
  return Status::Ok();
}

}  // namespace

Result<json> TokenizeRequest(std::string_view body, const tokenizer::Tokenizer& tok,
                             std::int64_t max_model_len, std::string_view chat_template,
                             std::string* model, std::string* param) {
  if (param) param->clear();
  SG_ASSIGN_OR_RETURN(const json doc, ParseObject(body, param));
  SG_RETURN_IF_ERROR(GetModel(doc, model, param));
  bool strs = false;
  SG_RETURN_IF_ERROR(GetFlag(doc, "return_token_strs", &strs, param));
  std::vector<std::int32_t> ids;
  if (doc.contains("messages")) {
    bool add_special = false, add_generation_prompt = true;
    SG_RETURN_IF_ERROR(GetFlag(doc, "add_special_tokens", &add_special, param));
    SG_RETURN_IF_ERROR(GetFlag(doc, "add_generation_prompt", &add_generation_prompt, param));
    // The chat request parser reads the messages (unknown fields are ignored there).
    SG_ASSIGN_OR_RETURN(const CompletionRequest chat,
                        ParseCompletionRequest(body, Endpoint::kChatCompletions, param));
    Result<std::string> text =
        tok.ApplyChatTemplate(chat.messages, add_generation_prompt, chat_template);
    if (!text.ok()) return Fail(param, "messages", std::string(text.status().message()));
    ids = tok.Encode(*text, add_special, /*parse_special=*/true);
  } else {
    const auto it = doc.find("prompt");
    if (it == doc.end() || !it->is_string()) {
      return Fail(param, "prompt", "'prompt' (a string) or 'messages' is required");
    }
    bool add_special = true;
    SG_RETURN_IF_ERROR(GetFlag(doc, "add_special_tokens", &add_special, param));
    ids = tok.Encode(it->get<std::string>(), add_special, /*parse_special=*/true);
  }
  json out = {{"count", ids.size()},
              {"max_model_len", max_model_len},
              {"tokens", ids},
              {"token_strs", nullptr}};
  if (strs) {
    json pieces = json::array();
    for (std::int32_t id : ids) pieces.push_back(std::string(tok.TokenToPiece(id)));
    out["token_strs"] = std::move(pieces);
  }
  return out;
}

Result<json> DetokenizeRequest(std::string_view body, const tokenizer::Tokenizer& tok,
                               std::string* model, std::string* param) {
  if (param) param->clear();
  SG_ASSIGN_OR_RETURN(const json doc, ParseObject(body, param));
  SG_RETURN_IF_ERROR(GetModel(doc, model, param));
  const auto it = doc.find("tokens");
  if (it == doc.end() || !it->is_array()) {
    return Fail(param, "tokens", "'tokens' (an array of token ids) is required");
  }
  std::vector<std::int32_t> ids;
  for (const json& t : *it) {
    if (!t.is_number_integer() || t.get<std::int64_t>() < 0 ||
        t.get<std::int64_t>() >= tok.n_vocab()) {
      return Fail(param, "tokens",
                  fmt::format("'tokens' must hold token ids below {}", tok.n_vocab()));
    }
    ids.push_back(t.get<std::int32_t>());
  }
  return json{{"prompt", tok.Decode(ids)}};
}

}  // namespace smartgen::server
