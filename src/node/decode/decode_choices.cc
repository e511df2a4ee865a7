// The decode node's n > 1 choices (GenerationSpec::n; decode_request.h): when a choice other
// than the first may start, and how the request ends once every choice has. See decode_node.h.
#include <algorithm>

#include "core/log.h"
#include "node/decode/decode_node.h"

namespace smartgen::node {

using nlohmann::json;

Readiness DecodeNode::CheckChoiceReady(const RequestPtr& self, int choice) {
  DecodeRequest& r = *self;
  std::vector<kv::BlockKey> pull;
  bool recompute = false;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    DecodeRequest::Choice& c = r.choices[static_cast<std::size_t>(choice - 1)];
    const auto n_prompt = static_cast<std::int64_t>(r.call.spec.prompt.size());
    if (r.local_kv && !r.prompt_logits.empty()) {
      // Choice 0 computed the prompt here (colocated, or a fallback): fork its KV and start from
      // its logits. (Its decode rows past the prompt are copied too, and overwritten here.)
      const Status st = c.kv->CopyFrom(*r.local_kv, n_prompt);
      return st.ok() ? Readiness::FromLogits(c.kv.get(), &r.prompt_logits) : Readiness::Fail(st);
    }
    const DecodeState s = r.state.state();
    // Choice 0 decodes (running, exact) or has decoded: the prompt's KV is coming or here.
    const bool started = s == DecodeState::kRunning || s == DecodeState::kExact;
    if (r.choice0_ended && !started) {
      // Choice 0 ended before it could start (an error or a cancel): so do the others.
      return Readiness::Fail(
          Cancelled("request {}: choice 0 ended before the prompt KV was ready", r.id()));
    }
    if (!r.prefill_done || !r.entry || r.local_kv || r.fallback_wanted || !started)
      return Readiness::Wait();
    if (r.smartgen && r.link_lost && (r.choice0_ended || !r.session_recovers) &&
        !r.choices_recomputed && !r.entry->residency.AllPresent()) {
      // The link is gone and choice 0's session will not recompute what is missing (it ended,
      // or it never fetches): compute it here, once, as the session would.
      r.choices_recomputed = true;
      recompute = true;
    }
    if (r.smartgen && !recompute) {
      // The staged copies of the partial last prompt block land between steps (here as well:
      // choice 0 may have ended already).
      r.entry->staged.Apply();
      if (r.pull_rest && !r.rest_pulled) {
        // Without the speculative stream nothing else makes the KV exact: pull what is missing
        // once, at the lowest priority (choice 0's on-demand fetches go first).
        r.rest_pulled = true;
        const kv::Residency& res = r.entry->residency;
        for (int l = 0; l < res.n_layers(); ++l) {
          for (int h = 0; h < res.n_kv_heads(); ++h) {
            for (std::int64_t b = res.first_needed(l); b < res.n_blocks(); ++b) {
              // Absent, or held as an int8 copy; a block already asked for is on its way.
              const kv::BlockState st = res.state(l, h, b);
              if (st == kv::BlockState::kAbsent || st == kv::BlockState::kApproximate) {
                pull.push_back({l, h, static_cast<std::int32_t>(b)});
              }
            }
          }
        }
      }
    }
    if (pull.empty() && !recompute) {
      if (!r.entry->residency.AllPresent()) return Readiness::Wait();
      // Every needed block is here exactly: the prompt's KV is final. Each choice gets its own
      // copy (its decode rows go into its own last prompt block).
      const Status st = c.kv->CopyFrom(r.entry->kv, n_prompt);
      return st.ok() ? Readiness::Go(c.first_token, c.kv.get()) : Readiness::Fail(st);
    }
  }
  // Outside r.mu: Fetch and RecomputeMissing take it.
  if (recompute) {
    const Status st = RecomputeMissing(r);
    return st.ok() ? Readiness::Wait() : Readiness::Fail(st);  // forks at the next check
  }
  if (const Status st =
          Fetch(r, pull, transfer::WireFormat::kNative, transfer::Priority::kSpeculative);
      !st.ok()) {
    SG_LOG_WARN("decode", "request {}: pulling the rest of the KV for its choices failed ({})",
                r.id(), st.ToString());
  }
  return Readiness::Wait();
}

void DecodeNode::ChoiceDone(const RequestPtr& r, int choice, const Status& status,
                            const std::string& reason, const json& engine_stats) {
  const int n = r->call.spec.n;
  if (n == 1) return Finish(r, status, reason, engine_stats);
  Status first_error;
  json stats;
  std::string overall;
  {
    std::lock_guard<std::mutex> lock(r->mu);
    r->finish_reasons[static_cast<std::size_t>(choice)] = status.ok() ? reason : "error";
    r->choice_tokens_out[static_cast<std::size_t>(choice)] = engine_stats.value("tokens", 0);
    if (choice == 0) {
      r->choice0_ended = true;
      r->choice0_stats = engine_stats;
    }
    if (!status.ok() && r->choices_status.ok()) r->choices_status = status;
    if (++r->choices_done < n) {
      if (!status.ok()) engine_->Cancel(r->id());  // one failed: the request fails, end the rest
      return;
    }
    first_error = r->choices_status;
    // One reason for the request: "cancelled" if any choice was, else "length" if any ran to
    // its limit, else "stop"; each choice's is in the stats.
    const auto any = [&](const char* what) {
      return std::find(r->finish_reasons.begin(), r->finish_reasons.end(), what) !=
             r->finish_reasons.end();
    };
    overall = any("cancelled") ? "cancelled" : any("length") ? "length" : "stop";
    stats = r->choice0_stats.is_object() ? r->choice0_stats : json::object();
    stats["choices"] = n;
    stats["finish_reasons"] = r->finish_reasons;
    stats["choice_tokens"] = r->choice_tokens_out;
    int total = 0;
    for (int t : r->choice_tokens_out) total += t;
    stats["tokens"] = total;
  }
  Finish(r, first_error, overall, stats);
}

}  // namespace smartgen::node
