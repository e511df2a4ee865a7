// PrefillNode::Job: one /internal/prefill call, queued by its HTTP handler and run by the
// node's worker (prefill_calls.cc). The handler waits on `cv` until the worker sets `done`.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "core/clock.h"
#include "node/prefill/prefill_node.h"

namespace smartgen::node {

struct PrefillNode::Job {
  PrefillCall call;
  core::Nanos enqueued = core::NowNanos();
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;                   // guarded by mu
  std::atomic<bool> cancelled{false};  // set by the HTTP side, read by the worker
  Result<PrefillReply> result = Status(StatusCode::kInternal, "not run");
};

}  // namespace smartgen::node
