// RequestState: the life of one request on the decode node as an explicit state machine, plain
// data with the clock passed in (tests drive it with any times they like).
//
//   registered ──PrefillStarted / KV──► awaiting_kv ──KV condition holds──► running ──all KV──► exact
//       │                                  │                                  │                 │
//       └──────── prefill failed, link lost, or the state's deadline ──────► fallback           │
//                                                                              │                │
//   any non-terminal state ──────────────────────────────────────► done | cancelled | failed ◄──┘
//
// Each waiting state owns a deadline (RequestDeadlines): `registered` waits for the prefill
// node to begin at most prefill_start; `awaiting_kv` allows at most kv_progress of silence from
// the prefill side (every control message or block for the request renews it). Past either,
// the request falls back (the prompt is computed here). `running`, `exact` and `fallback` are
// bounded per decode step (step, enforced by the SmartGen session) and by the request deadline.
//
// Thread-safety: none; the owner (DecodeRequest) serializes access.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/clock.h"

namespace smartgen::node {

enum class DecodeState : std::uint8_t {
  kRegistered = 0,  // KV reserved; the prefill node has not begun
  kAwaitingKv,      // the prefill node is computing / the KV is crossing the link
  kRunning,         // in the decode batch, selective attention over the KV present
  kExact,           // in the decode batch with every prompt block present
  kFallback,        // the prompt is computed here (the prefill side failed)
  kDone,            // finished normally (length, stop)
  kCancelled,       // the client or the router cancelled it
  kFailed,          // ended with an error
};
inline constexpr int kDecodeStateCount = 8;
std::string_view DecodeStateName(DecodeState s);
bool IsTerminal(DecodeState s);
// Whether `from` -> `to` is an edge of the diagram above.
bool IsLegalTransition(DecodeState from, DecodeState to);

struct RequestDeadlines {
  core::Nanos prefill_start = core::Seconds(30);  // registered: until the prefill node begins
  core::Nanos kv_progress = core::Seconds(10);    // awaiting_kv: longest prefill-side silence
  core::Nanos step = core::Seconds(5);            // running: longest KV wait of one step
};

class RequestState {
 public:
  RequestState(const RequestDeadlines& deadlines, core::Nanos now);

  DecodeState state() const { return state_; }
  core::Nanos entered_at() const { return entered_at_; }
  // Moves to `to` at `now`. False (state unchanged) when the edge is not in the diagram.
  bool Transition(DecodeState to, core::Nanos now);
  // Prefill-side activity for the request at `now`: renews awaiting_kv's deadline.
  void Progress(core::Nanos now);
  // When the current state's own deadline passes (the largest Nanos when it has none).
  core::Nanos deadline() const;
  bool Expired(core::Nanos now) const { return now >= deadline(); }

 private:
  RequestDeadlines deadlines_;
  DecodeState state_ = DecodeState::kRegistered;
  core::Nanos entered_at_;
  core::Nanos last_progress_;
};

}  // namespace smartgen::node
