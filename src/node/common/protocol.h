// The node control plane: what the router and the nodes say to each other.
//
// Router -> node calls are HTTP POSTs with JSON bodies on the node's internal port:
//   GET  /internal/info     -> NodeInfo
//   POST /internal/prefill  PrefillCall -> PrefillReply            (prefill node)
//   POST /internal/decode   DecodeCall  -> NDJSON DecodeEvent stream (decode node)
//   POST /internal/cancel   {"request_id": hex} (RequestRef)         (both)
//   POST /internal/fallback {"request_id": hex}                      (decode node)
// Request ids and KV tickets are 128-bit values in 32 hex digits (request_id.h).
// Prefill node <-> decode node messages ride the KV link as transfer control messages
// (control_messages.h), so they are ordered with the link and need no second channel.
//
// Every parser validates types and ranges and returns kInvalidArgument naming the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "model/sampler.h"
#include "node/common/generation_spec.h"
#include "node/common/request_id.h"
#include "node/common/transfer_mode.h"

namespace smartgen::node {

struct NodeInfo {
  std::string role;              // "prefill" | "decode"
  std::string name;
  std::string transfer_address;  // decode nodes: where prefill nodes connect for KV
  std::uint64_t model_fingerprint = 0;
  std::string model_name;
  std::int64_t context_length = 0;
  int block_tokens = 16;
  std::string kv_dtype;
  double link_gbps = 0;          // configured emulated link rate (0 = unshaped)
};

// A call is the request's GenerationSpec plus what the router decided for this attempt.
struct PrefillCall {
  RequestId request_id;
  KvTicket kv_ticket;            // proven to the decode node in PrefillStarted (request_id.h)
  GenerationSpec spec;
  TransferMode mode = TransferMode::kLayerwise;
  std::string decode_address;    // the decode node's transfer address
  std::int64_t timeout_ms = 60000;
};

struct PrefillReply {
  std::int32_t first_token = -1;
  double prefill_ms = 0;         // compute time of the prefill
  double queue_ms = 0;           // time waiting for the prefill worker
  nlohmann::json stats;          // transfer figures of the prefill side
};

struct DecodeCall {
  RequestId request_id;
  // The secret the assigned prefill node proves on the KV link; only the link that proves it
  // may send this request's KV. Absent (invalid) for colocated requests: no link may.
  KvTicket kv_ticket;
  GenerationSpec spec;
  TransferMode mode = TransferMode::kLayerwise;
  std::int64_t timeout_ms = 60000;
};

// One line of a decode stream.
struct DecodeEvent {
  // kAlive: a keep-alive line (http_rpc.h kStreamAliveInterval), nothing else.
  enum class Kind { kAccepted, kToken, kDone, kError, kAlive } kind = Kind::kAccepted;
  int index = 0;                 // kToken: position in the output (0 = first token)
  int choice = 0;                // kToken: which of the request's n choices, [0, n)
  std::int32_t token = -1;       // kToken
  // kToken, when the request asked (sampling.logprobs >= 0): {"logprob": lp, "top": [[id, lp]]}
  std::optional<model::TokenLogprobs> logprobs;
  std::string finish_reason;          // kDone: "length" | "stop" | "cancelled" (n > 1: of all)
  nlohmann::json stats;               // kDone (n > 1: "finish_reasons", one per choice)
  StatusCode code = StatusCode::kOk;  // kError
  std::string message;                // kError

  static DecodeEvent Accepted();
  static DecodeEvent Token(int index, std::int32_t token,
                           const model::TokenLogprobs* logprobs = nullptr, int choice = 0);
  static DecodeEvent Done(std::string finish_reason, nlohmann::json stats);
  static DecodeEvent Error(const Status& status);
};

nlohmann::json ToJson(const NodeInfo& v);
nlohmann::json ToJson(const PrefillCall& v);
nlohmann::json ToJson(const PrefillReply& v);
nlohmann::json ToJson(const DecodeCall& v);
nlohmann::json ToJson(const DecodeEvent& v);

Result<NodeInfo> ParseNodeInfo(const nlohmann::json& j);
Result<PrefillCall> ParsePrefillCall(const nlohmann::json& j);
Result<PrefillReply> ParsePrefillReply(const nlohmann::json& j);
Result<DecodeCall> ParseDecodeCall(const nlohmann::json& j);
Result<DecodeEvent> ParseDecodeEvent(const nlohmann::json& j);

// The body of /internal/cancel and /internal/fallback: {"request_id": hex, ...}.
nlohmann::json RequestRef(const RequestId& id);
Result<RequestId> ParseRequestRef(const nlohmann::json& j, const char* what);

// Parses text as JSON without throwing: kInvalidArgument with the parser's message.
Result<nlohmann::json> ParseJsonText(std::string_view text);

// A Status carried as {"code": "UNAVAILABLE", "message": "..."} and back.
nlohmann::json StatusToJson(const Status& s);
Status StatusFromJson(const nlohmann::json& j);

}  // namespace smartgen::node
