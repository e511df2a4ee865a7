// The messages that ride the KV link (transfer control messages, in order with each other):
// one binary encoding for all of them, one encoder, one decoder that never throws.
//
//   header       u64 request_id: the request's KV link handle (RequestId::link_handle())
//   kPrefillStarted     u64 id_hi, u64 ticket_hi,      prefill -> decode: the prefill began; the
//                       u64 ticket_lo                  rest of the 128-bit id and the KvTicket the
//                                                      router gave the prefill node (binds the
//                                                      link)
//   kPrefillDone        i32 first_token, i64 n_prompt  prefill -> decode: KV computed, token 1
//                       [f32 logprob, u32 n, n x (i32 id, f32 logprob)]: its log-probabilities
//   kPrefillFailed      u32 code, u32 n, n bytes text  prefill -> decode: compute it yourself
//   kSummaries          select::LayerSummaries::Serialize() bytes (one layer)
//   kProactiveManifest  u32 layer, u32 n, n x (u32 head, u32 block)
//   kRequested          u32 n, n x (u32 layer, u32 head, u32 block)  decode -> prefill: fetched
//                                                                     on demand, do not stream
//   kFirstStepManifest  as kProactiveManifest            prefill -> decode: the blocks the first
//                                                        decode step selects, pushed next, best
//                                                        first
//   kChoiceTokens       u32 n, n x i32 token, u8 lp,     prefill -> decode, just before PrefillDone
//                       [n x (f32 logprob, u32 k,        of a request of n + 1 choices: token 1 of
//                        k x (i32 id, f32 logprob))]     choices 1..n (choice 0's is PrefillDone's)
// All little-endian. DecodeControl checks every length and count against the bytes present
// and returns kDataLoss for a short, long or unknown message; it does not check ranges against
// a model (the receiver does, against the request's geometry).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "model/sampler.h"
#include "node/common/request_id.h"
#include "select/layer_selection.h"

namespace smartgen::node {

enum class ControlType : std::uint32_t {
  kPrefillDone = 1,
  kPrefillFailed = 2,
  kSummaries = 3,
  kProactiveManifest = 4,
  kRequested = 5,
  kPrefillStarted = 6,
  kFirstStepManifest = 7,
  kChoiceTokens = 8,
};
std::string_view ControlTypeName(ControlType type);

struct ControlMessage {
  ControlType type = ControlType::kPrefillStarted;
  std::uint64_t request_id = 0;             // the link handle
  std::uint64_t request_id_hi = 0;          // kPrefillStarted: the id's high half
  KvTicket ticket;                          // kPrefillStarted
  std::int32_t first_token = -1;            // kPrefillDone
  std::int64_t n_prompt = 0;                // kPrefillDone
  std::optional<model::TokenLogprobs> first_logprobs;  // kPrefillDone, when the request asked
  Status failure;                           // kPrefillFailed
  std::span<const std::byte> summaries;     // kSummaries: a view into the decoded bytes
  int layer = 0;                            // k*Manifest
  std::vector<kv::BlockKey> blocks;         // k*Manifest (of `layer`), kRequested
  std::vector<std::int32_t> choice_tokens;  // kChoiceTokens: token 1 of choices 1, 2, ...
  std::vector<model::TokenLogprobs> choice_logprobs;  // kChoiceTokens: theirs, or empty

  static ControlMessage PrefillStarted(const RequestId& id, const KvTicket& ticket);
  static ControlMessage PrefillDone(std::uint64_t id, std::int32_t first_token, std::int64_t n_prompt,
                                    const model::TokenLogprobs* first_logprobs = nullptr);
  static ControlMessage PrefillFailed(std::uint64_t id, const Status& why);
  static ControlMessage Summaries(std::uint64_t id, std::span<const std::byte> summaries);
  static ControlMessage Manifest(std::uint64_t id, int layer, std::vector<kv::BlockKey> blocks);
  static ControlMessage FirstStepManifest(std::uint64_t id, int layer,
                                          std::vector<kv::BlockKey> blocks);
  static ControlMessage Requested(std::uint64_t id, std::vector<kv::BlockKey> blocks);
  // `logprobs`: empty, or one per token.
  static ControlMessage ChoiceTokens(std::uint64_t id, std::vector<std::int32_t> tokens,
                                     std::vector<model::TokenLogprobs> logprobs = {});
};

// The wire bytes of `m` (its type travels as the transfer control message type).
std::vector<std::byte> EncodeControl(const ControlMessage& m);
// Parses a control message of `type`. `bytes` must outlive the result's `summaries` view.
Result<ControlMessage> DecodeControl(std::uint32_t type, std::span<const std::byte> bytes);

}  // namespace smartgen::node
