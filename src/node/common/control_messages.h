// The messages that ride the KV link (transfer control messages, in order with each other):
// one binary encoding for all of them, one encoder, one decoder that never throws.
//
//   header       u64 request_id
//   kPrefillStarted     (nothing more)                 prefill -> decode: the prefill began
//   kPrefillDone        i32 first_token, i64 n_prompt  prefill -> decode: KV computed, token 1
//                       [f32 logprob, u32 n, n x (i32 id, f32 logprob)]: its log-probabilities
//   kPrefillFailed      u32 code, u32 n, n bytes text  prefill -> decode: compute it yourself
//   kSummaries          select::LayerSummaries::Serialize() bytes (one layer)
//   kProactiveManifest  u32 layer, u32 n, n x (u32 head, u32 block)
//   kRequested          u32 n, n x (u32 layer, u32 head, u32 block)  decode -> prefill: fetched
//                                                                     on demand, do not stream
//   kFirstStepManifest  as kProactiveManifest            prefill -> decode: the blocks the first
//                                                        decode step selects, pushed next, best first
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
};
std::string_view ControlTypeName(ControlType type);

struct ControlMessage {
  ControlType type = ControlType::kPrefillStarted;
  std::uint64_t request_id = 0;
  std::int32_t first_token = -1;            // kPrefillDone
  std::int64_t n_prompt = 0;                // kPrefillDone
  std::optional<model::TokenLogprobs> first_logprobs;  // kPrefillDone, when the request asked
  Status failure;                           // kPrefillFailed
  std::span<const std::byte> summaries;     // kSummaries: a view into the decoded bytes
  int layer = 0;                            // k*Manifest
  std::vector<kv::BlockKey> blocks;         // k*Manifest (of `layer`), kRequested

  static ControlMessage PrefillStarted(std::uint64_t id);
  static ControlMessage PrefillDone(std::uint64_t id, std::int32_t first_token, std::int64_t n_prompt,
                                    const model::TokenLogprobs* first_logprobs = nullptr);
  static ControlMessage PrefillFailed(std::uint64_t id, const Status& why);
  static ControlMessage Summaries(std::uint64_t id, std::span<const std::byte> summaries);
  static ControlMessage Manifest(std::uint64_t id, int layer, std::vector<kv::BlockKey> blocks);
  static ControlMessage FirstStepManifest(std::uint64_t id, int layer,
                                          std::vector<kv::BlockKey> blocks);
  static ControlMessage Requested(std::uint64_t id, std::vector<kv::BlockKey> blocks);
};

// The wire bytes of `m` (its type travels as the transfer control message type).
std::vector<std::byte> EncodeControl(const ControlMessage& m);
// Parses a control message of `type`. `bytes` must outlive the result's `summaries` view.
Result<ControlMessage> DecodeControl(std::uint32_t type, std::span<const std::byte> bytes);

}  // namespace smartgen::node
