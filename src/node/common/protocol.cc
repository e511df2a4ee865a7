#include "node/common/protocol.h"

namespace smartgen::node {
namespace {

using nlohmann::json;

// Typed field access that never throws.
class Fields {
 public:
  Fields(const json& j, const char* what) : j_(j), what_(what) {}

  Status Check() const {
    if (!j_.is_object()) return InvalidArgument("{}: expected a JSON object", what_);
    return Status::Ok();
  }
  template <typename T>
  Status Required(const char* key, T* out) const {
    if (!j_.contains(key)) return InvalidArgument("{}: field '{}' is missing", what_, key);
    return Get(key, out);
  }
  template <typename T>
  Status Optional(const char* key, T* out) const {
    if (!j_.contains(key) || j_.at(key).is_null()) return Status::Ok();
    return Get(key, out);
  }

 private:
  template <typename T>
  Status Get(const char* key, T* out) const {
    const json& v = j_.at(key);
    bool ok;
    if constexpr (std::is_same_v<T, bool>) {
      ok = v.is_boolean();
    } else if constexpr (std::is_integral_v<T>) {
      ok = v.is_number_integer();
    } else if constexpr (std::is_floating_point_v<T>) {
      ok = v.is_number();
    } else if constexpr (std::is_same_v<T, std::string>) {
      ok = v.is_string();
    } else if constexpr (std::is_same_v<T, std::vector<std::int32_t>>) {
      ok = v.is_array();
      if (ok) {
        for (const json& e : v) ok = ok && e.is_number_integer();
      }
    } else {
      ok = true;  // json
    }
    if (!ok) return InvalidArgument("{}: field '{}' has the wrong type", what_, key);
    *out = v.get<T>();
    return Status::Ok();
  }

  const json& j_;
  const char* what_;
};

Result<TransferMode> ModeField(const json& j, const char* what) {
  std::string name;
  SG_RETURN_IF_ERROR(Fields(j, what).Required("mode", &name));
  return ParseTransferMode(name);
}

}  // namespace

json ToJson(const model::SamplingParams& v) {
  return {{"temperature", v.temperature}, {"top_k", v.top_k}, {"top_p", v.top_p},
          {"seed", v.seed}};
}

Result<model::SamplingParams> ParseSamplingParams(const json& j) {
  model::SamplingParams p;
  if (j.is_null()) return p;
  Fields f(j, "sampling");
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

json ToJson(const NodeInfo& v) {
  return {{"role", v.role}, {"name", v.name}, {"transfer_address", v.transfer_address},
          {"model_fingerprint", v.model_fingerprint}, {"model_name", v.model_name},
          {"context_length", v.context_length}, {"block_tokens", v.block_tokens},
          {"kv_dtype", v.kv_dtype}, {"link_gbps", v.link_gbps}};
}

Result<NodeInfo> ParseNodeInfo(const json& j) {
  NodeInfo v;
  Fields f(j, "node info");
  SG_RETURN_IF_ERROR(f.Check());
  SG_RETURN_IF_ERROR(f.Required("role", &v.role));
  SG_RETURN_IF_ERROR(f.Required("name", &v.name));
  SG_RETURN_IF_ERROR(f.Optional("transfer_address", &v.transfer_address));
  SG_RETURN_IF_ERROR(f.Required("model_fingerprint", &v.model_fingerprint));
  SG_RETURN_IF_ERROR(f.Optional("model_name", &v.model_name));
  SG_RETURN_IF_ERROR(f.Required("context_length", &v.context_length));
  SG_RETURN_IF_ERROR(f.Optional("block_tokens", &v.block_tokens));
  SG_RETURN_IF_ERROR(f.Optional("kv_dtype", &v.kv_dtype));
  SG_RETURN_IF_ERROR(f.Optional("link_gbps", &v.link_gbps));
  return v;
}

json ToJson(const PrefillCall& v) {
  return {{"request_id", v.request_id}, {"prompt", v.prompt}, {"sampling", ToJson(v.sampling)},
          {"mode", TransferModeName(v.mode)}, {"decode_address", v.decode_address},
          {"timeout_ms", v.timeout_ms}, {"options", v.options}};
}

Result<PrefillCall> ParsePrefillCall(const json& j) {
  PrefillCall v;
  Fields f(j, "prefill call");
  SG_RETURN_IF_ERROR(f.Check());
  SG_RETURN_IF_ERROR(f.Required("request_id", &v.request_id));
  SG_RETURN_IF_ERROR(f.Required("prompt", &v.prompt));
  if (v.prompt.empty()) return InvalidArgument("prefill call: empty prompt");
  if (j.contains("sampling")) {
    SG_ASSIGN_OR_RETURN(v.sampling, ParseSamplingParams(j["sampling"]));
  }
  SG_ASSIGN_OR_RETURN(v.mode, ModeField(j, "prefill call"));
  SG_RETURN_IF_ERROR(f.Optional("decode_address", &v.decode_address));
  SG_RETURN_IF_ERROR(f.Optional("timeout_ms", &v.timeout_ms));
  SG_RETURN_IF_ERROR(f.Optional("options", &v.options));
  return v;
}

json ToJson(const PrefillReply& v) {
  return {{"first_token", v.first_token}, {"prefill_ms", v.prefill_ms},
          {"queue_ms", v.queue_ms}, {"stats", v.stats}};
}

Result<PrefillReply> ParsePrefillReply(const json& j) {
  PrefillReply v;
  Fields f(j, "prefill reply");
  SG_RETURN_IF_ERROR(f.Check());
  SG_RETURN_IF_ERROR(f.Required("first_token", &v.first_token));
  SG_RETURN_IF_ERROR(f.Optional("prefill_ms", &v.prefill_ms));
  SG_RETURN_IF_ERROR(f.Optional("queue_ms", &v.queue_ms));
  SG_RETURN_IF_ERROR(f.Optional("stats", &v.stats));
  return v;
}

json ToJson(const DecodeCall& v) {
  return {{"request_id", v.request_id}, {"prompt", v.prompt}, {"max_tokens", v.max_tokens},
          {"sampling", ToJson(v.sampling)}, {"mode", TransferModeName(v.mode)},
          {"stop_at_eog", v.stop_at_eog}, {"timeout_ms", v.timeout_ms}, {"options", v.options}};
}

Result<DecodeCall> ParseDecodeCall(const json& j) {
  DecodeCall v;
  Fields f(j, "decode call");
  SG_RETURN_IF_ERROR(f.Check());
  SG_RETURN_IF_ERROR(f.Required("request_id", &v.request_id));
  SG_RETURN_IF_ERROR(f.Required("prompt", &v.prompt));
  if (v.prompt.empty()) return InvalidArgument("decode call: empty prompt");
  SG_RETURN_IF_ERROR(f.Required("max_tokens", &v.max_tokens));
  if (v.max_tokens < 1) return InvalidArgument("decode call: max_tokens {} < 1", v.max_tokens);
  if (j.contains("sampling")) {
    SG_ASSIGN_OR_RETURN(v.sampling, ParseSamplingParams(j["sampling"]));
  }
  SG_ASSIGN_OR_RETURN(v.mode, ModeField(j, "decode call"));
  SG_RETURN_IF_ERROR(f.Optional("stop_at_eog", &v.stop_at_eog));
  SG_RETURN_IF_ERROR(f.Optional("timeout_ms", &v.timeout_ms));
  SG_RETURN_IF_ERROR(f.Optional("options", &v.options));
  return v;
}

DecodeEvent DecodeEvent::Accepted() { return DecodeEvent(); }

DecodeEvent DecodeEvent::Token(int index, std::int32_t token) {
  DecodeEvent e;
  e.kind = Kind::kToken;
  e.index = index;
  e.token = token;
  return e;
}

DecodeEvent DecodeEvent::Done(std::string finish_reason, nlohmann::json stats) {
  DecodeEvent e;
  e.kind = Kind::kDone;
  e.finish_reason = std::move(finish_reason);
  e.stats = std::move(stats);
  return e;
}

DecodeEvent DecodeEvent::Error(const Status& status) {
  DecodeEvent e;
  e.kind = Kind::kError;
  e.code = status.code();
  e.message = std::string(status.message());
  return e;
}

json ToJson(const DecodeEvent& v) {
  switch (v.kind) {
    case DecodeEvent::Kind::kAccepted: return {{"event", "accepted"}};
    case DecodeEvent::Kind::kAlive: return {{"event", "alive"}};
    case DecodeEvent::Kind::kToken:
      return {{"event", "token"}, {"index", v.index}, {"token", v.token}};
    case DecodeEvent::Kind::kDone:
      return {{"event", "done"}, {"finish_reason", v.finish_reason}, {"stats", v.stats}};
    case DecodeEvent::Kind::kError:
      return {{"event", "error"}, {"code", StatusCodeName(v.code)}, {"message", v.message}};
  }
  return {};
}

Result<DecodeEvent> ParseDecodeEvent(const json& j) {
  DecodeEvent v;
  Fields f(j, "decode event");
  SG_RETURN_IF_ERROR(f.Check());
  std::string event;
  SG_RETURN_IF_ERROR(f.Required("event", &event));
  if (event == "accepted") {
    v.kind = DecodeEvent::Kind::kAccepted;
  } else if (event == "alive") {
    v.kind = DecodeEvent::Kind::kAlive;
  } else if (event == "token") {
    v.kind = DecodeEvent::Kind::kToken;
    SG_RETURN_IF_ERROR(f.Required("index", &v.index));
    SG_RETURN_IF_ERROR(f.Required("token", &v.token));
  } else if (event == "done") {
    v.kind = DecodeEvent::Kind::kDone;
    SG_RETURN_IF_ERROR(f.Required("finish_reason", &v.finish_reason));
    SG_RETURN_IF_ERROR(f.Optional("stats", &v.stats));
  } else if (event == "error") {
    v.kind = DecodeEvent::Kind::kError;
    const Status s = StatusFromJson(j);
    v.code = s.code();
    v.message = std::string(s.message());
  } else {
    return InvalidArgument("decode event: unknown event '{}'", event);
  }
  return v;
}

Result<json> ParseJsonText(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("malformed JSON ({} bytes)", text.size());
  return j;
}

json StatusToJson(const Status& s) {
  return {{"code", StatusCodeName(s.code())}, {"message", std::string(s.message())}};
}

Status StatusFromJson(const json& j) {
  std::string code = "INTERNAL", message = "no message";
  if (j.is_object()) {
    if (j.contains("code") && j["code"].is_string()) code = j["code"].get<std::string>();
    if (j.contains("message") && j["message"].is_string()) message = j["message"].get<std::string>();
  }
  for (int c = 1; c <= static_cast<int>(StatusCode::kInternal); ++c) {
    if (StatusCodeName(static_cast<StatusCode>(c)) == code) {
      return Status(static_cast<StatusCode>(c), message);
    }
  }
  return Internal("{}", message);
}

}  // namespace smartgen::node
