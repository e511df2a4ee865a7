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
#include <optional>
#include <string>

#include "core/clock.h"
#include "kv/sequence_kv.h"
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
};

}  // namespace smartgen::node
