#include "node/decode/decode_engine.h"

#include <algorithm>

#include "core/log.h"
#include "core/timer_slack.h"

namespace smartgen::node {

struct DecodeEngine::Seq {
  EngineJob job;
  model::Sampler sampler;
  std::int32_t last_token = -1;  // emitted but not yet fed (its KV is not in the cache)
  int n_out = 0;                 // tokens emitted so far (index of the next one)
  bool prefilled_locally = false;
  bool cancelled = false;
  bool failed = false;
  core::Nanos start = core::NowNanos();
  core::Nanos decode_start = 0;
  double wait_ms = 0;
  std::vector<double> step_ms;  // the first 64 decode steps' durations (the batch's step, waits included)
  std::vector<float> logits;
  std::vector<std::int32_t> own_picks;  // teacher forcing: the argmax at every output index
  model::TokenLogprobs logprobs;        // of the last pick, when the request asked
  const model::TokenLogprobs* LastLogprobs() const {
    return job.spec.sampling.logprobs >= 0 && !job.spec.teacher_forced() ? &logprobs : nullptr;
  }

  explicit Seq(EngineJob j) : job(std::move(j)), sampler(job.spec.sampling) {}

  // Output token `index` given this step's logits: the sample, or under teacher forcing the
  // forced token (the argmax is recorded).
  std::int32_t Pick(int index) {
    const std::int32_t own = sampler.Sample(logits, &logprobs);
    if (!job.spec.teacher_forced()) return own;
    own_picks.push_back(model::Greedy(logits));
    return job.spec.Emitted(index, own);
  }
};

DecodeEngine::DecodeEngine(model::Forward* forward, DecodeEngineOptions options)
    : forward_(forward), options_(options) {
  thread_ = std::thread([this] { Loop(); });
}

DecodeEngine::~DecodeEngine() { Stop(); }

void DecodeEngine::Submit(EngineJob job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stop_) {
      incoming_.push_back(std::move(job));
      cv_.notify_all();
      return;
    }
  }
  if (job.on_done) job.on_done(Cancelled("the decode engine is stopping"), "cancelled", {});
}

void DecodeEngine::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake_ = true;
  }
  cv_.notify_all();
}

void DecodeEngine::Cancel(std::uint64_t request_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancels_.push_back(request_id);
  }
  cv_.notify_all();
}

void DecodeEngine::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int DecodeEngine::running() const { return n_running_.load(); }
int DecodeEngine::waiting() const { return n_waiting_.load(); }
std::uint64_t DecodeEngine::steps() const { return steps_.load(); }

void DecodeEngine::Loop() {
  // A SmartGen step's bounded waits for on-demand blocks (one per layer) end at their bound,
  // not the default 50 us slack after it.
  constexpr std::int64_t kTimerSlackNs = 1000;
  if (const Status st = core::SetTimerSlack(kTimerSlackNs); !st.ok()) {
    SG_LOG_WARN("decode", "timer slack left at the default: {}", st.ToString());
  }
  while (true) {
    std::vector<std::uint64_t> cancels;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (running_.empty() && incoming_.empty() && cancels_.empty() && !stop_) {
        if (waiting_.empty()) {
          cv_.wait(lock, [&] { return stop_ || !incoming_.empty() || !cancels_.empty(); });
        } else {
          cv_.wait_for(lock, std::chrono::nanoseconds(options_.idle_wait),
                       [&] { return stop_ || wake_ || !incoming_.empty() || !cancels_.empty(); });
        }
      }
      wake_ = false;
      if (stop_) break;
      while (!incoming_.empty()) {
        waiting_.push_back(std::make_unique<Seq>(std::move(incoming_.front())));
        incoming_.pop_front();
      }
      cancels.swap(cancels_);
    }
    for (std::uint64_t id : cancels) {
      for (auto* list : {&waiting_, &running_}) {
        for (auto& s : *list) {
          if (s->job.request_id == id) s->cancelled = true;
        }
      }
    }
    Admit(&waiting_);
    if (!running_.empty()) Step();
    n_running_.store(static_cast<int>(running_.size()));
    n_waiting_.store(static_cast<int>(waiting_.size()));
  }
  // Stopping: every job ends once.
  for (auto* list : {&waiting_, &running_}) {
    for (auto& s : *list) Finish(*s, Cancelled("the decode engine is stopping"), "cancelled");
    list->clear();
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (EngineJob& j : incoming_) {
    if (j.on_done) j.on_done(Cancelled("the decode engine is stopping"), "cancelled", {});
  }
  incoming_.clear();
}

void DecodeEngine::Admit(std::vector<std::unique_ptr<Seq>>* waiting) {
  for (auto it = waiting->begin(); it != waiting->end();) {
    Seq& s = **it;
    if (s.cancelled) {
      Finish(s, Status::Ok(), "cancelled");
      it = waiting->erase(it);
      continue;
    }
    if (s.job.deadline.Expired(*options_.clock)) {
      Finish(s, DeadlineExceeded("request {} timed out before decoding started", s.job.request_id), "");
      it = waiting->erase(it);
      continue;
    }
    if (static_cast<int>(running_.size()) >= options_.max_batch) break;
    const Readiness r = s.job.ready ? s.job.ready() : Readiness::PrefillLocally();
    if (r.kind == Readiness::Kind::kWait) {
      ++it;
      continue;
    }
    s.wait_ms = core::ToMillis(core::NowNanos() - s.start);
    std::unique_ptr<Seq> seq = std::move(*it);
    it = waiting->erase(it);
    if (r.kind == Readiness::Kind::kFail) {
      Finish(*seq, r.status, "");
      continue;
    }
    if (r.kv != nullptr) {
      // A fallback (the prompt is computed here) or a fork of complete prompt KV: attention
      // is dense.
      seq->job.kv = r.kv;
      seq->job.attention = nullptr;
    }
    if (r.kind == Readiness::Kind::kPrefillLocally) {
      if (!PrefillLocally(*seq)) continue;  // finished (error or a one-token output)
    } else if (r.kind == Readiness::Kind::kFromLogits) {
      seq->job.kv->set_n_tokens(static_cast<std::int64_t>(seq->job.spec.prompt.size()));
      seq->logits = *r.logits;
      if (!StartFromLogits(*seq)) continue;
    } else {
      // Token 0 came from the prefill node, which computed the prompt's KV: its positions are
      // valid here (all of them arrived, or the attention override fetches what is missing).
      seq->job.kv->set_n_tokens(static_cast<std::int64_t>(seq->job.spec.prompt.size()));
      if (seq->job.spec.teacher_forced()) seq->own_picks.push_back(r.first_token);
      seq->last_token = seq->job.spec.Emitted(0, r.first_token);
      seq->n_out = 1;
      seq->sampler = model::Sampler(seq->job.spec.sampling, 1);
      seq->sampler.SetPrompt(seq->job.spec.prompt);  // the penalties see the prompt and token 0
      seq->sampler.Accept(seq->last_token);
      std::string reason;
      if (Done(*seq, seq->last_token, &reason)) {
        Finish(*seq, Status::Ok(), reason);
        continue;
      }
    }
    seq->decode_start = core::NowNanos();
    running_.push_back(std::move(seq));
  }
}

bool DecodeEngine::PrefillLocally(Seq& s) {
  s.prefilled_locally = true;
  s.job.kv->set_n_tokens(0);
  const Status st = forward_->RunOne(s.job.kv, s.job.spec.prompt, &s.logits);
  if (!st.ok()) {
    Finish(s, st, "");
    return false;
  }
  if (s.job.on_prompt_logits) s.job.on_prompt_logits(s.logits);
  return StartFromLogits(s);
}

bool DecodeEngine::StartFromLogits(Seq& s) {
  s.sampler = model::Sampler(s.job.spec.sampling, 0);
  s.sampler.SetPrompt(s.job.spec.prompt);
  s.own_picks.clear();
  const std::int32_t token = s.Pick(0);
  s.last_token = token;
  s.n_out = 1;
  if (s.job.on_token && !s.job.on_token(0, token, s.LastLogprobs())) {
    Finish(s, Status::Ok(), "cancelled");
    return false;
  }
  std::string reason;
  if (Done(s, token, &reason)) {
    Finish(s, Status::Ok(), reason);
    return false;
  }
  return true;
}

bool DecodeEngine::Done(Seq& s, std::int32_t token, std::string* reason) const {
  if (s.job.spec.stop_at_eog && forward_->model().tokenizer().IsEog(token)) {
    *reason = "stop";
    return true;
  }
  if (s.n_out >= s.job.spec.max_tokens || s.job.kv->n_tokens() + 1 > forward_->max_context()) {
    *reason = "length";
    return true;
  }
  return false;
}

void DecodeEngine::Step() {
  // Drop cancelled or expired sequences first.
  std::erase_if(running_, [&](std::unique_ptr<Seq>& s) {
    if (s->cancelled) {
      Finish(*s, Status::Ok(), "cancelled");
      return true;
    }
    if (s->job.deadline.Expired(*options_.clock)) {
      Finish(*s, DeadlineExceeded("request {} ran past its deadline", s->job.request_id), "");
      return true;
    }
    return false;
  });
  if (running_.empty()) return;

  std::vector<model::ForwardChunk> chunks(running_.size());
  for (std::size_t i = 0; i < running_.size(); ++i) {
    Seq& s = *running_[i];
    chunks[i].kv = s.job.kv;
    chunks[i].tokens = std::span<const std::int32_t>(&s.last_token, 1);
    chunks[i].logits = &s.logits;
    // A SmartGen request whose KV became exact attends densely, batched with the others.
    chunks[i].attention =
        s.job.attention != nullptr && !s.job.attention->Done() ? s.job.attention : nullptr;
  }
  const core::Nanos t0 = core::NowNanos();
  Status st = forward_->Run(chunks);
  const double step_ms = core::ToMillis(core::NowNanos() - t0);
  for (const auto& s : running_) {
    if (s->step_ms.size() < 64) s->step_ms.push_back(step_ms);
  }
  if (!st.ok()) {
    // One sequence's attention failed (e.g. its KV link died): run each alone to find it, so
    // the others keep going.
    SG_LOG_WARN("decode", "batched step failed ({}); retrying sequences one by one", st.ToString());
    for (std::size_t i = 0; i < running_.size(); ++i) {
      model::ForwardChunk one[1] = {chunks[i]};
      const Status alone = forward_->Run(one);
      if (!alone.ok()) {
        Finish(*running_[i], alone, "");
        running_[i]->failed = true;
      }
    }
  }
  steps_.fetch_add(1);
  for (auto it = running_.begin(); it != running_.end();) {
    Seq& s = **it;
    if (s.failed) {  // finished above
      it = running_.erase(it);
      continue;
    }
    const int index = s.n_out++;
    const std::int32_t token = s.Pick(index);
    s.last_token = token;
    bool keep = !s.job.on_token || s.job.on_token(index, token, s.LastLogprobs());
    std::string reason;
    if (!keep) {
      Finish(s, Status::Ok(), "cancelled");
    } else if (Done(s, token, &reason)) {
      Finish(s, Status::Ok(), reason);
      keep = false;
    }
    it = keep ? it + 1 : running_.erase(it);
  }
}

void DecodeEngine::Finish(Seq& s, const Status& status, const std::string& reason) {
  if (!s.job.on_done) return;
  nlohmann::json stats = {
      {"wait_ms", s.wait_ms},
      {"prefilled_locally", s.prefilled_locally},
      {"tokens", s.n_out},
      {"decode_ms", s.decode_start ? core::ToMillis(core::NowNanos() - s.decode_start) : 0.0},
      {"step_ms_per_step", s.step_ms},
  };
  if (s.job.spec.teacher_forced()) stats["argmax_tokens"] = s.own_picks;
  auto on_done = std::move(s.job.on_done);
  s.job.on_done = nullptr;
  on_done(status, status.ok() ? reason : "", stats);
}

}  // namespace smartgen::node
