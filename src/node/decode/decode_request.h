// DecodeRequest: everything the decode node holds for one request, as one owned object.
//
// Owners: the node's registry (until the request ends) and the decode engine's job (while it
// waits or runs). Every callback handed to another thread - the engine's ready/on_token/on_done,
// the SmartGen session's fetch/recompute/on_exact, the HTTP stream's disconnect - holds a
// shared_ptr or a weak_ptr to it, never a raw pointer, so whichever owner lets go last frees it.
//
// The request's life is `state` (request_state.h); every field below `mu` is guarded by it.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "kv/sequence_kv.h"
#include "model/sampler.h"
#include "node/common/http_rpc.h"
#include "node/common/protocol.h"
#include "node/decode/decode_kv_store.h"
#include "node/decode/request_state.h"
#include "node/decode/smartgen_session.h"
#include "transfer/types.h"

namespace smartgen::node {

struct DecodeRequest {
  DecodeRequest(DecodeCall c, std::string registered_by, const RequestDeadlines& deadlines)
      : call(std::move(c)), owner(std::move(registered_by)), state(deadlines, core::NowNanos()) {}

  // The request's name here and on the KV link: its id's link handle (request_id.h).
  std::uint64_t id() const { return call.request_id.link_handle(); }

  const DecodeCall call;
  const std::string owner;  // the caller that registered it (CallerOf): only it may cancel
  const core::Nanos start = core::NowNanos();
  std::shared_ptr<DecodeKvStore::Entry> entry;  // prompt KV filled over the link (disaggregated)
  std::unique_ptr<kv::SequenceKv> local_kv;     // KV computed here (colocated or fallback)
  std::unique_ptr<SmartgenSession> smartgen;    // smartgen mode
  const std::shared_ptr<LineQueue> events = std::make_shared<LineQueue>();
  std::atomic<bool> client_gone{false};

  std::mutex mu;
  RequestState state;
  std::int32_t first_token = -1;        // from PrefillDone
  bool prefill_done = false;
  // The KV link, from the PrefillStarted that proved the request's KV ticket on (the KV store
  // is tied to the same link, DecodeKvStore::Bind).
  std::optional<transfer::PeerId> peer;
  bool fallback_wanted = false;         // compute the prompt here at the next readiness check
  std::string fallback_reason;
  bool recomputed = false;     // the KV link failed mid-decode; the missing KV was computed here
  bool link_finished = false;  // FinishRequest sent: the prefill node may free the KV
  core::Nanos prefill_done_at = 0;
  core::Nanos kv_ready_at = 0;

  // n > 1 choices (GenerationSpec::n). Choice 0 is the request as if it had one choice: its
  // engine job decodes in `entry->kv` (or `local_kv`), with SmartGen's attention in smartgen
  // mode. Choice i >= 1 is an engine job of its own that decodes densely in choices[i - 1].kv,
  // a copy of the prompt's KV made once that KV is exact here (every needed block present, or
  // computed here by choice 0), so each choice owns its decode rows and its last prompt block.
  struct Choice {
    std::unique_ptr<kv::SequenceKv> kv;  // reserved at registration for prompt + output
    std::int32_t first_token = -1;       // token 0, from kChoiceTokens (disaggregated)
    std::optional<model::TokenLogprobs> first_logprobs;
  };
  std::vector<Choice> choices;       // [n - 1]; the kv pointers do not change after Register
  bool choice_tokens_seen = false;   // kChoiceTokens arrived
  std::vector<float> prompt_logits;  // choice 0 computed the prompt here: its last logits
  // SmartGen without the speculative stream: the decode node pulls the blocks still missing at
  // the lowest priority once decoding starts, so the KV gets exact and the choices can fork.
  bool pull_rest = false;
  bool rest_pulled = false;
  // The KV link went down while choice 0 decoded: what it did not bring is computed here
  // (RecomputeMissing), by choice 0's session or, if that has ended, by the waiting choices.
  bool link_lost = false;
  bool session_recovers = false;  // choice 0's session fetches on demand, so it recomputes
  bool choices_recomputed = false;
  // Per choice, as its engine job ends; the request finishes when all n have.
  int choices_done = 0;
  bool choice0_ended = false;
  std::vector<std::string> finish_reasons;  // [n]; "" until that choice ends
  std::vector<int> choice_tokens_out;       // [n]: tokens each choice emitted
  Status choices_status;                    // the first error of any choice
  nlohmann::json choice0_stats;             // the engine's figures of choice 0
};

}  // namespace smartgen::node
