#include "node/decode/request_state.h"

#include <limits>

namespace smartgen::node {

std::string_view DecodeStateName(DecodeState s) {
  switch (s) {
    case DecodeState::kRegistered: return "registered";
    case DecodeState::kAwaitingKv: return "awaiting_kv";
    case DecodeState::kRunning: return "running";
    case DecodeState::kExact: return "exact";
    case DecodeState::kFallback: return "fallback";
    case DecodeState::kDone: return "done";
    case DecodeState::kCancelled: return "cancelled";
    case DecodeState::kFailed: return "failed";
  }
  return "unknown";
}

bool IsTerminal(DecodeState s) {
  return s == DecodeState::kDone || s == DecodeState::kCancelled || s == DecodeState::kFailed;
}

bool IsLegalTransition(DecodeState from, DecodeState to) {
  if (IsTerminal(from)) return false;
  if (IsTerminal(to)) return true;
  switch (from) {
    case DecodeState::kRegistered:
      return to == DecodeState::kAwaitingKv || to == DecodeState::kFallback ||
             to == DecodeState::kRunning;  // colocated requests run at once
    case DecodeState::kAwaitingKv:
      return to == DecodeState::kRunning || to == DecodeState::kExact || to == DecodeState::kFallback;
    case DecodeState::kRunning: return to == DecodeState::kExact;
    case DecodeState::kExact:
    case DecodeState::kFallback:
    default: return false;
  }
}

RequestState::RequestState(const RequestDeadlines& deadlines, core::Nanos now)
    : deadlines_(deadlines), entered_at_(now), last_progress_(now) {}

bool RequestState::Transition(DecodeState to, core::Nanos now) {
  if (!IsLegalTransition(state_, to)) return false;
  state_ = to;
  entered_at_ = now;
  last_progress_ = now;
  return true;
}

void RequestState::Progress(core::Nanos now) { last_progress_ = std::max(last_progress_, now); }

core::Nanos RequestState::deadline() const {
  switch (state_) {
    case DecodeState::kRegistered: return entered_at_ + deadlines_.prefill_start;
    case DecodeState::kAwaitingKv: return last_progress_ + deadlines_.kv_progress;
    default: return std::numeric_limits<core::Nanos>::max();
  }
}

}  // namespace smartgen::node
