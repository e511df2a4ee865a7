#include "node/common/protocol.h"

#include "node/common/json_fields.h"

namespace smartgen::node {
namespace {

using nlohmann::json;

Result<TransferMode> ModeField(const json& j, const char* what) {
  std::string name;
  SG_RETURN_IF_ERROR(JsonFields(j, what).Required("mode", &name));
  return ParseTransferMode(name);
}

Result<Id128> IdField(const json& j, const char* key, const char* what) {
  std::string hex;
  SG_RETURN_IF_ERROR(JsonFields(j, what).Required(key, &hex));
  return ParseId128(hex, fmt::format("{}: {}", what, key).c_str());
}

}  // namespace

json RequestRef(const RequestId& id) { return {{"request_id", id.ToHex()}}; }

Result<RequestId> ParseRequestRef(const json& j, const char* what) {
  SG_RETURN_IF_ERROR(JsonFields(j, what).Check());
  return IdField(j, "request_id", what);
}

json ToJson(const NodeInfo& v) {
  return {{"role", v.role}, {"name", v.name}, {"transfer_address", v.transfer_address},
          {"model_fingerprint", v.model_fingerprint}, {"model_name", v.model_name},
          {"context_length", v.context_length}, {"block_tokens", v.block_tokens},
          {"kv_dtype", v.kv_dtype}, {"link_gbps", v.link_gbps}};
}

Result<NodeInfo> ParseNodeInfo(const json& j) {
  NodeInfo v;
  JsonFields f(j, "node info");
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
  return {{"request_id", v.request_id.ToHex()}, {"kv_ticket", v.kv_ticket.ToHex()},
          {"generation", ToJson(v.spec)},
          {"mode", TransferModeName(v.mode)}, {"decode_address", v.decode_address},
          {"timeout_ms", v.timeout_ms}};
}

Result<PrefillCall> ParsePrefillCall(const json& j) {
  PrefillCall v;
  JsonFields f(j, "prefill call");
  SG_RETURN_IF_ERROR(f.Check());
  SG_ASSIGN_OR_RETURN(v.request_id, IdField(j, "request_id", "prefill call"));
  SG_ASSIGN_OR_RETURN(v.kv_ticket, IdField(j, "kv_ticket", "prefill call"));
  if (!j.contains("generation")) return InvalidArgument("prefill call: field 'generation' is missing");
  SG_ASSIGN_OR_RETURN(v.spec, ParseGenerationSpec(j["generation"], "prefill call"));
  SG_ASSIGN_OR_RETURN(v.mode, ModeField(j, "prefill call"));
  SG_RETURN_IF_ERROR(f.Optional("decode_address", &v.decode_address));
  SG_RETURN_IF_ERROR(f.Optional("timeout_ms", &v.timeout_ms));
  return v;
}

json ToJson(const PrefillReply& v) {
  return {{"first_token", v.first_token}, {"prefill_ms", v.prefill_ms},
          {"queue_ms", v.queue_ms}, {"stats", v.stats}};
}

Result<PrefillReply> ParsePrefillReply(const json& j) {
  PrefillReply v;
  JsonFields f(j, "prefill reply");
  SG_RETURN_IF_ERROR(f.Check());
  SG_RETURN_IF_ERROR(f.Required("first_token", &v.first_token));
  SG_RETURN_IF_ERROR(f.Optional("prefill_ms", &v.prefill_ms));
  SG_RETURN_IF_ERROR(f.Optional("queue_ms", &v.queue_ms));
  SG_RETURN_IF_ERROR(f.Optional("stats", &v.stats));
  return v;
}

json ToJson(const DecodeCall& v) {
  json j = {{"request_id", v.request_id.ToHex()}, {"generation", ToJson(v.spec)},
            {"mode", TransferModeName(v.mode)}, {"timeout_ms", v.timeout_ms}};
  if (v.kv_ticket.valid()) j["kv_ticket"] = v.kv_ticket.ToHex();
  return j;
}

Result<DecodeCall> ParseDecodeCall(const json& j) {
  DecodeCall v;
  JsonFields f(j, "decode call");
  SG_RETURN_IF_ERROR(f.Check());
  SG_ASSIGN_OR_RETURN(v.request_id, IdField(j, "request_id", "decode call"));
  if (j.contains("kv_ticket") && !j["kv_ticket"].is_null()) {
    SG_ASSIGN_OR_RETURN(v.kv_ticket, IdField(j, "kv_ticket", "decode call"));
  }
  if (!j.contains("generation")) return InvalidArgument("decode call: field 'generation' is missing");
  SG_ASSIGN_OR_RETURN(v.spec, ParseGenerationSpec(j["generation"], "decode call"));
  SG_ASSIGN_OR_RETURN(v.mode, ModeField(j, "decode call"));
  SG_RETURN_IF_ERROR(f.Optional("timeout_ms", &v.timeout_ms));
  return v;
}

DecodeEvent DecodeEvent::Accepted() { return DecodeEvent(); }

DecodeEvent DecodeEvent::Token(int index, std::int32_t token, const model::TokenLogprobs* logprobs,
                               int choice) {
  DecodeEvent e;
  e.kind = Kind::kToken;
  e.index = index;
  e.choice = choice;
  e.token = token;
  if (logprobs) e.logprobs = *logprobs;
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
    case DecodeEvent::Kind::kToken: {
      json j = {{"event", "token"}, {"index", v.index}, {"token", v.token}};
      if (v.choice != 0) j["choice"] = v.choice;
      if (v.logprobs) {
        j["logprob"] = v.logprobs->logprob;
        json top = json::array();
        for (const auto& [id, lp] : v.logprobs->top) top.push_back({id, lp});
        j["top"] = std::move(top);
      }
      return j;
    }
    case DecodeEvent::Kind::kDone:
      return {{"event", "done"}, {"finish_reason", v.finish_reason}, {"stats", v.stats}};
    case DecodeEvent::Kind::kError:
      return {{"event", "error"}, {"code", StatusCodeName(v.code)}, {"message", v.message}};
  }
  return {};
}

Result<DecodeEvent> ParseDecodeEvent(const json& j) {
  DecodeEvent v;
  JsonFields f(j, "decode event");
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
    SG_RETURN_IF_ERROR(f.Optional("choice", &v.choice));
    if (v.choice < 0 || v.choice >= kMaxChoices) {
      return InvalidArgument("decode event: choice {} is outside [0, {})", v.choice, kMaxChoices);
    }
    if (j.contains("logprob")) {
      model::TokenLogprobs lp;
      SG_RETURN_IF_ERROR(f.Required("logprob", &lp.logprob));
      const json* top = j.contains("top") ? &j["top"] : nullptr;
      if (!top || !top->is_array() || top->size() > model::kMaxTopLogprobs) {
        return InvalidArgument("decode event: 'top' must be at most {} [id, logprob] pairs",
                               model::kMaxTopLogprobs);
      }
      for (const json& pair : *top) {
        if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() ||
            !pair[1].is_number()) {
          return InvalidArgument("decode event: 'top' entries must be [id, logprob]");
        }
        lp.top.emplace_back(pair[0].get<std::int32_t>(), pair[1].get<float>());
      }
      v.logprobs = std::move(lp);
    }
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
