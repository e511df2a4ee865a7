#include "server/completion_session.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include "core/log.h"
#include "server/api_error.h"
#include "server/sse.h"

namespace smartgen::server {
namespace {

using nlohmann::json;

std::chrono::steady_clock::time_point ToTimePoint(core::Nanos t) {
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(t));
}

bool IsChat(const SessionSetup& s) {
  return s.header.endpoint == Endpoint::kChatCompletions;
}

GenerationRequest WithCancelSignal(GenerationRequest request) {
  if (!request.cancel) request.cancel = std::make_shared<CancelSignal>();
  return request;
}

}  // namespace

CompletionSession::CompletionSession(CompletionBackend* backend, GenerationRequest request,
                                     SessionSetup setup, ServerMetrics* metrics)
    : backend_(backend),
      request_(WithCancelSignal(std::move(request))),
      setup_(std::move(setup)),
      metrics_(metrics),
      tokenizer_(backend->tokenizer()),
      backend_choices_(backend->features().choices),
      choice_ended_(new std::atomic<bool>[static_cast<std::size_t>(
          std::max(request_.n, 1))]) {
  const int n = std::max(request_.n, 1);
  ChoiceLimits limits{setup_.stop, request_.max_tokens, request_.ignore_eos, setup_.echo};
  choices_.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    choice_ended_[i].store(false);
    choices_.emplace_back(tokenizer_, limits);
  }
}

CompletionSession::~CompletionSession() {
  Cancel(Cancelled("the request ended"));
  if (thread_.joinable()) thread_.join();
}

void CompletionSession::Start() {
  thread_ = std::thread([this] { RunGeneration(); });
}

void CompletionSession::RunGeneration() {
  // A backend must not throw; keep the server alive.
  const auto generate = [this](const GenerationRequest& request, const TokenSink& sink) {
    try {
      return backend_->Generate(request, sink);
    } catch (const std::exception& e) {
      return Result<GenerationResult>(Internal("backend threw: {}", e.what()));
    }
  };
  std::vector<Result<GenerationResult>> results;
  if (request_.n <= 1 || backend_choices_) {
    results.push_back(generate(request_, [this](const GeneratedToken& t) { return OnToken(t); }));
  } else {
    // n requests of one choice each, choice i on its own thread with seed + i.
    const int n = request_.n;
    results.assign(static_cast<std::size_t>(n), Internal("the backend did not run"));
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([this, i, &results, &generate] {
        GenerationRequest one = request_;
        one.n = 1;
        one.sampling.seed += static_cast<std::uint64_t>(i);
        one.request_id = fmt::format("{}-{}", request_.request_id, i);
        results[static_cast<std::size_t>(i)] = generate(one, [this, i](const GeneratedToken& t) {
          return OnToken(GeneratedToken(t.id, i, t.logprobs));
        });
      });
    }
    for (std::thread& t : threads) t.join();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    results_ = std::move(results);
    done_ = true;
  }
  cv_.notify_all();
}

bool CompletionSession::OnToken(const GeneratedToken& token) {
  if (cancelled_.load(std::memory_order_acquire)) return false;
  if (token.choice < 0 || token.choice >= static_cast<int>(choices_.size())) return false;
  if (choice_ended_[token.choice].load(std::memory_order_acquire)) return false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Queued q{token.id, token.choice, std::nullopt};
    if (token.logprobs) q.logprobs = *token.logprobs;
    queue_.push_back(std::move(q));
  }
  cv_.notify_all();
  return !cancelled_.load(std::memory_order_acquire) &&
         !choice_ended_[token.choice].load(std::memory_order_acquire);
}

void CompletionSession::Cancel(Status reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancel_reason_.ok()) cancel_reason_ = std::move(reason);
  }
  cancelled_.store(true, std::memory_order_release);
  cv_.notify_all();
  request_.cancel->Cancel();
}

bool CompletionSession::CheckClient() {
  if (client_gone_) return true;
  if (setup_.client_gone && setup_.client_gone()) {
    client_gone_ = true;
    Cancel(Cancelled("the client closed the connection"));
  }
  return client_gone_;
}

CompletionSession::Wake CompletionSession::WaitForTokens(std::vector<Queued>* batch,
                                                         core::Nanos idle) {
  batch->clear();
  const core::Nanos now = core::NowNanos();
  // Once cancelled, the deadline no longer applies: wait for the backend to return.
  const bool deadline_applies = !cancelled_.load(std::memory_order_acquire);
  core::Nanos until = now + std::min<core::Nanos>(idle, core::Seconds(3600));
  if (deadline_applies) until = std::min(until, request_.deadline.when());
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_until(lock, ToTimePoint(until), [&] { return !queue_.empty() || done_; });
  if (!queue_.empty()) {
    batch->assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
    queue_.clear();
    return Wake::kTokens;
  }
  if (done_) return Wake::kDone;
  if (deadline_applies && request_.deadline.Expired()) return Wake::kDeadline;
  return Wake::kIdle;
}

Status CompletionSession::AwaitFirstToken() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    const auto ready = [&] { return !queue_.empty() || done_; };
    const core::Nanos poll = setup_.client_gone ? setup_.client_poll : core::Seconds(3600);
    while (!ready() && !request_.deadline.Expired()) {
      const core::Nanos step = std::min<core::Nanos>(request_.deadline.Remaining(), poll);
      if (cv_.wait_until(lock, ToTimePoint(core::NowNanos() + step), ready)) break;
      lock.unlock();
      const bool gone = CheckClient();
      lock.lock();
      if (gone) {
        cv_.wait(lock, [&] { return done_; });  // the backend returns soon after a cancel
        break;
      }
    }
    if (!queue_.empty() && !client_gone_) return Status::Ok();
    if (!done_) {
      lock.unlock();
      Cancel(DeadlineExceeded("the request ran past its deadline before the first token"));
      lock.lock();
      // The backend returns soon after a cancel (its contract); tokens that raced the
      // deadline stay queued and are never sent: the request has failed.
      cv_.wait(lock, [&] { return done_; });
    }
  }
  return FinalStatus();  // OK: generation ended successfully without a token
}

bool CompletionSession::Consume(const Queued& token) {
  if (complete_) return false;
  ChoiceOutput& choice = choices_[static_cast<std::size_t>(token.choice)];
  GeneratedToken t(token.id, token.choice, token.logprobs ? &*token.logprobs : nullptr);
  if (!choice.Consume(t)) return false;
  const core::Nanos now = core::NowNanos();
  metrics_->generation_tokens.Increment();
  const bool first_of_all = first_token_at_ == 0;
  if (first_of_all) {
    first_token_at_ = now;
    metrics_->ttft.Observe(core::ToSeconds(now - setup_.arrival));
  }
  // Token gaps are those of choice 0 (the others interleave with it).
  if (token.choice == 0) {
    const std::int64_t k = choice.completion_tokens();
    if (k == 2) {
      ttst_ms_ = core::ToMillis(now - last_token_at_);
      metrics_->ttst.Observe(core::ToSeconds(now - last_token_at_));
    } else if (k > 2) {
      tbt_sum_ms_ += core::ToMillis(now - last_token_at_);
      ++tbt_count_;
      metrics_->tbt.Observe(core::ToSeconds(now - last_token_at_));
    }
    last_token_at_ = now;
    if (token_ms_.size() < kMaxTokenTimes) {
      token_ms_.push_back(core::ToMillis(now - setup_.arrival));
    }
  }
  if (choice.complete()) {
    choice_ended_[token.choice].store(true, std::memory_order_release);
    if (++choices_complete_ == static_cast<int>(choices_.size())) {
      complete_ = true;
      // Not an error: the output is complete (a well-behaved backend may have stopped already).
      Cancel(Cancelled("the output is complete"));
    }
  }
  return true;
}

Status CompletionSession::FinalStatus() {
  std::lock_guard<std::mutex> lock(mu_);
  if (complete_) return Status::Ok();
  if (!cancel_reason_.ok()) return cancel_reason_;
  for (std::size_t i = 0; i < results_.size(); ++i) {
    if (!results_[i].ok()) return results_[i].status();
    // Cancelled by someone other than this server (e.g. a node's cancel): not an answer. One
    // of n single-choice requests that this server ended (its choice complete) is fine.
    const bool ended_here = results_.size() > 1 && choices_[i].complete();
    if (results_[i]->finish_reason == "cancelled" && !ended_here) {
      return Unavailable("the backend cancelled the request before it was complete");
    }
  }
  return Status::Ok();
}

std::string CompletionSession::FinishReason(int choice) const {
  // The backend ended on its own terms (results_ is final: read after done_ was seen).
  const std::size_t r = results_.size() > 1 ? static_cast<std::size_t>(choice) : 0;
  std::string backend;
  if (r < results_.size() && results_[r].ok()) backend = results_[r]->finish_reason;
  return choices_[static_cast<std::size_t>(choice)].FinishReason(backend);
}

void CompletionSession::RecordSuccess() {
  metrics_->request_generation_tokens.Observe(static_cast<double>(usage().completion_tokens));
  for (int i = 0; i < static_cast<int>(choices_.size()); ++i) metrics_->CountFinish(FinishReason(i));
}

Usage CompletionSession::usage() const {
  Usage u{setup_.prompt_tokens, 0};
  for (const ChoiceOutput& c : choices_) u.completion_tokens += c.completion_tokens();
  return u;
}

json CompletionSession::ChoiceLogprobs(int index, bool take) {
  if (request_.sampling.logprobs < 0) return nullptr;
  ChoiceOutput& choice = choices_[static_cast<std::size_t>(index)];
  const std::vector<LogprobEntry> entries = take ? choice.TakeLogprobs() : choice.logprobs();
  if (IsChat(setup_)) return ChatLogprobsJson(tokenizer_, entries);
  if (take) return CompletionLogprobsJson(tokenizer_, entries, choice.text_offset());
  std::int64_t offset = static_cast<std::int64_t>(setup_.echo.size());
  return CompletionLogprobsJson(tokenizer_, entries, &offset);
}

json CompletionSession::SmartgenStats() const {
  json stats = json::object();
  if (!results_.empty() && results_[0].ok()) {
    const json& backend = results_[0]->stats;
    if (backend.is_object()) {
      stats = backend;
    } else if (!backend.is_null()) {
      stats["backend"] = backend;
    }
  }
  json server = {{"e2e_ms", core::ToMillis(core::NowNanos() - setup_.arrival)}};
  if (first_token_at_ != 0) server["ttft_ms"] = core::ToMillis(first_token_at_ - setup_.arrival);
  if (ttst_ms_ >= 0) server["ttst_ms"] = ttst_ms_;
  if (tbt_count_ > 0) server["tbt_ms"] = tbt_sum_ms_ / static_cast<double>(tbt_count_);
  stats["server"] = std::move(server);
  if (setup_.return_token_ids) {
    stats["token_ids"] = choices_[0].tokens();
    if (choices_.size() > 1) {
      json all = json::array();
      for (const ChoiceOutput& c : choices_) all.push_back(c.tokens());
      stats["choices_token_ids"] = std::move(all);
    }
    stats["server"]["token_ms"] = token_ms_;  // arrival of each token (ms since the request's)
  }
  return stats;
}

Result<json> CompletionSession::Collect() {
  std::vector<Queued> batch;
  const core::Nanos poll = setup_.client_gone ? setup_.client_poll : core::Seconds(3600);
  while (true) {
    const Wake wake = WaitForTokens(&batch, poll);
    if (wake == Wake::kDone) break;
    if (wake == Wake::kDeadline) Cancel(DeadlineExceeded("the request ran past its deadline"));
    if (wake == Wake::kIdle) CheckClient();
    for (const Queued& t : batch) Consume(t);
  }
  SG_RETURN_IF_ERROR(FinalStatus());
  std::vector<ChoiceBody> bodies;
  for (int i = 0; i < static_cast<int>(choices_.size()); ++i) {
    bodies.push_back({choices_[i].text(), FinishReason(i), ChoiceLogprobs(i, /*take=*/false)});
  }
  json body = CompletionResponse(setup_.header, bodies, usage(), SmartgenStats());
  RecordSuccess();
  metrics_->e2e.Observe(core::ToSeconds(core::NowNanos() - setup_.arrival));
  return body;
}

int CompletionSession::Stream(const ByteWriter& write, const std::function<void(int)>& on_end) {
  // Reports the outcome before the final [DONE], so that a client that has read the whole
  // stream finds it in the metrics.
  auto end = [&](int outcome) {
    if (on_end) on_end(outcome);
    return outcome;
  };
  bool client_gone = false;
  core::Nanos last_write = core::NowNanos();
  auto send = [&](const std::string& bytes) {
    if (client_gone) return;
    last_write = core::NowNanos();
    if (!write(bytes)) {
      client_gone = true;
      Cancel(Cancelled("the client closed the connection"));
    }
  };
  const int n = static_cast<int>(choices_.size());
  // Choice i's text so far (and the log-probabilities of its tokens), when there is some.
  auto send_delta = [&](int i, bool rest) {
    ChoiceOutput& c = choices_[static_cast<std::size_t>(i)];
    const std::string text = rest ? c.TakeRest() : c.TakeDelta();
    if (text.empty() && (!rest || c.untaken_logprobs() == 0)) return;  // logprobs wait for text
    const json logprobs = ChoiceLogprobs(i, /*take=*/true);
    send(SseEvent(DumpJson(
        ChoiceChunk(setup_.header, text, "", false, setup_.include_usage, i, logprobs))));
  };
  if (IsChat(setup_)) {
    for (int i = 0; i < n; ++i) {
      send(SseEvent(DumpJson(ChoiceChunk(setup_.header, "", "", /*role_chunk=*/true,
                                         setup_.include_usage, i))));
    }
  }
  std::vector<Queued> batch;
  const core::Nanos poll = setup_.client_gone
                               ? std::min(setup_.client_poll, setup_.keepalive_interval)
                               : setup_.keepalive_interval;
  while (true) {
    const Wake wake = WaitForTokens(&batch, poll);
    if (wake == Wake::kDone) break;
    if (wake == Wake::kDeadline) Cancel(DeadlineExceeded("the request ran past its deadline"));
    // Asked on every wake-up, tokens or not: tokens may produce no bytes to write (held back
    // for a stop sequence, or part of a character), so a failed write alone can be late.
    if (!client_gone && CheckClient()) client_gone = true;
    if (wake == Wake::kIdle && !client_gone &&
        core::NowNanos() - last_write >= setup_.keepalive_interval) {
      send(SseComment("keep-alive"));
    }
    if (client_gone) continue;  // nobody to deliver to: wait for the backend to stop
    for (const Queued& t : batch) {
      if (Consume(t)) send_delta(t.choice, /*rest=*/false);
    }
  }
  if (client_gone) return end(499);

  const Status status = FinalStatus();
  if (!status.ok()) {
    // Headers (200) are gone already: report the error in the stream, as vLLM does.
    const ApiError error = ApiErrorFromStatus(status);
    send(SseEvent(DumpJson(ApiErrorJson(error))));
    end(error.http_status);
    send(SseEvent(kSseDone));
    return error.http_status;
  }
  for (int i = 0; i < n; ++i) send_delta(i, /*rest=*/true);
  for (int i = 0; i + 1 < n; ++i) {
    send(SseEvent(
        DumpJson(ChoiceChunk(setup_.header, "", FinishReason(i), false, setup_.include_usage, i))));
  }
  json finish =
      ChoiceChunk(setup_.header, "", FinishReason(n - 1), false, setup_.include_usage, n - 1);
  json stats = SmartgenStats();
  if (setup_.include_usage) {
    send(SseEvent(DumpJson(finish)));
    json usage_chunk = UsageChunk(setup_.header, usage());
    usage_chunk["smartgen"] = std::move(stats);
    send(SseEvent(DumpJson(usage_chunk)));
  } else {
    finish["smartgen"] = std::move(stats);
    send(SseEvent(DumpJson(finish)));
  }
  if (client_gone) return end(499);
  metrics_->e2e.Observe(core::ToSeconds(core::NowNanos() - setup_.arrival));
  RecordSuccess();
  end(200);
  send(SseEvent(kSseDone));
  return client_gone ? 499 : 200;
}

}  // namespace smartgen::server
