// DecodeEngine: continuous batching on one node. Sequences join and leave between steps; every
// step runs one forward pass over one token of each running sequence (DESIGN.md section 7).
//
// A job enters waiting; each loop iteration asks waiting jobs whether they can start
// (Readiness: the KV has arrived, or the prompt must be computed here), prefills those that
// need it one at a time, then decodes all running sequences in one batch. Tokens are reported
// through the job's callbacks from the engine thread, in order; on_done is called exactly once.
//
// Choices (GenerationSpec::n > 1) are the caller's: one job per choice, each with its own KV,
// spec (seed) and callbacks; a choice's job starts from another's prompt through its
// Readiness (Go or FromLogits with a forked KV; on_prompt_logits hands a local prefill's
// logits over).
//
// Teacher forcing (GenerationSpec::forced_tokens): the tokens emitted and fed back are the
// forced ones, and every step's own pick (greedy argmax of its logits; token 0's is the
// prefill node's) is collected into the final stats as `argmax_tokens`.
//
// Thread-safety: Submit/Cancel/Stop from any thread. Callbacks run on the engine thread and
// must not block for long (they queue events for HTTP writers).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/result.h"
#include "kv/sequence_kv.h"
#include "model/forward.h"
#include "model/sampler.h"
#include "node/common/generation_spec.h"

namespace smartgen::node {

// What a waiting job says when asked whether it can start.
struct Readiness {
  enum class Kind { kWait, kGo, kPrefillLocally, kFromLogits, kFail } kind = Kind::kWait;
  std::int32_t first_token = -1;  // kGo: token 0, sampled by the prefill node
  Status status;                  // kFail
  // kPrefillLocally: compute into this KV instead of the job's; kGo, kFromLogits: the prompt's
  // KV is already here (a fork) - the job decodes in it instead of its own. Either way the job
  // attends densely (its attention override is dropped). Null: the job's own KV.
  kv::SequenceKv* kv = nullptr;
  // kFromLogits: the prompt's last logits (computed here for another choice of the request);
  // token 0 is sampled from them by the job's own sampler. Read during the call only.
  const std::vector<float>* logits = nullptr;
  static Readiness Wait() { return {}; }
  static Readiness Go(std::int32_t token, kv::SequenceKv* kv = nullptr) {
    return {Kind::kGo, token, {}, kv, nullptr};
  }
  static Readiness PrefillLocally(kv::SequenceKv* kv = nullptr) {
    return {Kind::kPrefillLocally, -1, {}, kv, nullptr};
  }
  static Readiness FromLogits(kv::SequenceKv* kv, const std::vector<float>* logits) {
    return {Kind::kFromLogits, -1, {}, kv, logits};
  }
  static Readiness Fail(Status s) { return {Kind::kFail, -1, std::move(s), nullptr, nullptr}; }
};

struct EngineJob {
  std::uint64_t request_id = 0;
  kv::SequenceKv* kv = nullptr;           // the sequence's KV (prompt reserved), in `owner`
  std::shared_ptr<void> owner;            // owns what `kv` and `attention` point into
  GenerationSpec spec;                    // prompt, max_tokens, sampling, forcing, ...
  core::Deadline deadline = core::Deadline::Never();
  model::AttentionOverride* attention = nullptr;  // decode-step attention (SmartGen), or dense

  // Asked while waiting: at every Wake() and at least every idle_wait (for deadlines);
  // null = prefill locally at once.
  std::function<Readiness()> ready;
  // Token `index` of the output; return false to cancel the job.
  // `logprobs`: the token's log-probabilities when spec.sampling.logprobs >= 0, else null; valid
  // during the call.
  std::function<bool(int index, std::int32_t token, const model::TokenLogprobs* logprobs)> on_token;
  // After a local prefill of the prompt (kPrefillLocally), before token 0 is sampled: the
  // prompt's last logits (other choices of the request start from them). May be null.
  std::function<void(const std::vector<float>& logits)> on_prompt_logits;
  // Exactly once: OK with "length" | "stop" | "cancelled", or the error. `stats` has engine-side
  // figures (decode_ms, steps, prefilled_locally, ...).
  std::function<void(const Status&, const std::string& finish_reason, const nlohmann::json& stats)>
      on_done;
};

struct DecodeEngineOptions {
  int max_batch = 64;                     // running sequences per step
  core::Nanos idle_wait = core::Millis(20);  // longest sleep when only waiting jobs exist
  const core::Clock* clock = &core::SteadyClock();  // what job deadlines are read on (tests: manual)
};

class DecodeEngine {
 public:
  DecodeEngine(model::Forward* forward, DecodeEngineOptions options = {});
  ~DecodeEngine();  // Stop()
  DecodeEngine(const DecodeEngine&) = delete;
  DecodeEngine& operator=(const DecodeEngine&) = delete;

  // After Stop, the job ends at once (kCancelled).
  void Submit(EngineJob job);
  // Something a waiting job depends on changed: ask the waiting jobs again now.
  void Wake();
  // Ends the job with "cancelled" at the next step boundary. Unknown id: no-op.
  void Cancel(std::uint64_t request_id);
  // Fails every job with kCancelled and joins the thread.
  void Stop();

  int running() const;
  int waiting() const;
  std::uint64_t steps() const;

 private:
  struct Seq;
  void Loop();
  void Admit(std::vector<std::unique_ptr<Seq>>* waiting);
  // Computes the prompt here and emits token 0; false when the job already finished.
  bool PrefillLocally(Seq& s);
  // Samples token 0 from s.logits with a fresh sampler and emits it; false when finished.
  bool StartFromLogits(Seq& s);
  void Step();
  void Finish(Seq& s, const Status& status, const std::string& reason);
  // After emitting token `t` at index i: whether the sequence is done, and why.
  bool Done(Seq& s, std::int32_t token, std::string* reason) const;

  model::Forward* forward_;
  DecodeEngineOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<EngineJob> incoming_;
  std::vector<std::uint64_t> cancels_;
  bool stop_ = false;
  bool wake_ = false;
  std::atomic<int> n_running_{0}, n_waiting_{0};
  std::atomic<std::uint64_t> steps_{0};
  std::vector<std::unique_ptr<Seq>> waiting_, running_;  // engine thread only
  std::thread thread_;
};

}  // namespace smartgen::node
