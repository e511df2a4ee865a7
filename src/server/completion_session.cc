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
      text_(setup_.stop) {}

CompletionSession::~CompletionSession() {
  Cancel(Cancelled("the request ended"));
  if (thread_.joinable()) thread_.join();
}

void CompletionSession::Start() {
  thread_ = std::thread([this] {
    Result<GenerationResult> result = Internal("the backend did not run");
    try {
      result = backend_->Generate(request_, [this](std::int32_t t) { return OnToken(t); });
    } catch (const std::exception& e) {  // a backend must not throw; keep the server alive
      result = Internal("backend threw: {}", e.what());
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      result_.emplace(std::move(result));
      done_ = true;
    }
    cv_.notify_all();
  });
}

bool CompletionSession::OnToken(std::int32_t token) {
  if (cancelled_.load(std::memory_order_acquire)) return false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(token);
  }
  cv_.notify_all();
  return !cancelled_.load(std::memory_order_acquire);
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

CompletionSession::Wake CompletionSession::WaitForTokens(std::vector<std::int32_t>* batch,
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
    batch->assign(queue_.begin(), queue_.end());
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

bool CompletionSession::Consume(std::int32_t token) {
  if (complete_) return false;
  const core::Nanos now = core::NowNanos();
  ++completion_tokens_;
  tokens_.push_back(token);
  metrics_->generation_tokens.Increment();
  if (completion_tokens_ == 1) {
    first_token_at_ = now;
    metrics_->ttft.Observe(core::ToSeconds(now - setup_.arrival));
  } else if (completion_tokens_ == 2) {
    ttst_ms_ = core::ToMillis(now - last_token_at_);
    metrics_->ttst.Observe(core::ToSeconds(now - last_token_at_));
  } else {
    tbt_sum_ms_ += core::ToMillis(now - last_token_at_);
    ++tbt_count_;
    metrics_->tbt.Observe(core::ToSeconds(now - last_token_at_));
  }
  last_token_at_ = now;
  if (token_ms_.size() < kMaxTokenTimes) token_ms_.push_back(core::ToMillis(now - setup_.arrival));

  if (tokenizer_.IsEog(token)) {
    eog_ = true;
    complete_ = true;
  } else if (text_.Append(tokenizer_.TokenToPiece(token, /*special=*/false))) {
    stop_hit_ = true;
    complete_ = true;
    Cancel(Cancelled("stop sequence"));  // not an error: the output is complete
  }
  if (completion_tokens_ >= request_.max_tokens && !complete_) {
    complete_ = true;
    Cancel(Cancelled("max_tokens reached"));  // a well-behaved backend has stopped already
  }
  return true;
}

Status CompletionSession::FinalStatus() {
  std::lock_guard<std::mutex> lock(mu_);
  if (complete_) return Status::Ok();
  if (!cancel_reason_.ok()) return cancel_reason_;
  if (result_ && !result_->ok()) return result_->status();
  if (result_ && (*result_)->finish_reason == "cancelled") {
    // Cancelled by someone other than this server (e.g. a node's cancel): not an answer.
    return Unavailable("the backend cancelled the request before it was complete");
  }
  return Status::Ok();
}

std::string CompletionSession::FinishReason() const {
  if (stop_hit_ || eog_) return "stop";
  if (completion_tokens_ >= request_.max_tokens) return "length";
  // The backend ended on its own terms (result_ is final: read after done_ was seen).
  if (result_ && result_->ok() && !(*result_)->finish_reason.empty()) {
    return (*result_)->finish_reason;
  }
  return "length";
}

json CompletionSession::SmartgenStats() const {
  json stats = json::object();
  if (result_ && result_->ok()) {
    const json& backend = (*result_)->stats;
    if (backend.is_object()) {
      stats = backend;
    } else if (!backend.is_null()) {
      stats["backend"] = backend;
    }
  }
  json server = {{"e2e_ms", core::ToMillis(core::NowNanos() - setup_.arrival)}};
  if (completion_tokens_ >= 1) server["ttft_ms"] = core::ToMillis(first_token_at_ - setup_.arrival);
  if (ttst_ms_ >= 0) server["ttst_ms"] = ttst_ms_;
  if (tbt_count_ > 0) server["tbt_ms"] = tbt_sum_ms_ / static_cast<double>(tbt_count_);
  stats["server"] = std::move(server);
  if (setup_.return_token_ids) {
    stats["token_ids"] = tokens_;
    stats["server"]["token_ms"] = token_ms_;  // arrival of each token (ms since the request's)
  }
  return stats;
}

Result<json> CompletionSession::Collect() {
  std::vector<std::int32_t> batch;
  const core::Nanos poll = setup_.client_gone ? setup_.client_poll : core::Seconds(3600);
  while (true) {
    const Wake wake = WaitForTokens(&batch, poll);
    if (wake == Wake::kDone) break;
    if (wake == Wake::kDeadline) Cancel(DeadlineExceeded("the request ran past its deadline"));
    if (wake == Wake::kIdle) CheckClient();
    for (std::int32_t t : batch) Consume(t);
  }
  SG_RETURN_IF_ERROR(FinalStatus());
  json body =
      CompletionResponse(setup_.header, text_.text(), FinishReason(), usage(), SmartgenStats());
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
  auto send_chunk = [&](const std::string& text) {
    send(SseEvent(DumpJson(ChoiceChunk(setup_.header, text, "", false, setup_.include_usage))));
  };
  if (IsChat(setup_)) {
    send(SseEvent(
        DumpJson(ChoiceChunk(setup_.header, "", "", /*role_chunk=*/true, setup_.include_usage))));
  }
  std::vector<std::int32_t> batch;
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
    for (std::int32_t t : batch) {
      if (!Consume(t)) continue;
      const std::string delta = text_.TakeDelta();
      if (!delta.empty()) send_chunk(delta);
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
  const std::string rest = text_.TakeRest();
  if (!rest.empty()) send_chunk(rest);
  json finish = ChoiceChunk(setup_.header, "", FinishReason(), false, setup_.include_usage);
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
  end(200);
  send(SseEvent(kSseDone));
  return client_gone ? 499 : 200;
}

}  // namespace smartgen::server
