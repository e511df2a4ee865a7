// The prefill node's control-plane calls: /internal/prefill (queued, run one at a time by the
// worker) and /internal/cancel (only from the caller that asked for the prefill). See
// prefill_node.h.
#include "core/log.h"
#include "node/prefill/prefill_job.h"

namespace smartgen::node {

using nlohmann::json;

void PrefillNode::HandlePrefill(const httplib::Request& req, httplib::Response& res) {
  auto body = ParseJsonText(req.body);
  if (!body.ok()) return ReplyStatus(res, body.status());
  auto call = ParsePrefillCall(*body);
  if (!call.ok()) return ReplyStatus(res, call.status());
  // KV goes only to the decode nodes this node was configured with (--allow-decode), so a
  // caller holding the token cannot make it connect anywhere or feed another pool.
  if (Result<bool> allowed = DecodeAddressAllowed(config_.allowed_decode, call->decode_address);
      !allowed.ok() || !*allowed) {
    metrics_.GetCounter("smartgen_prefill_decode_refused_total",
                        "Prefill calls refused: the decode address is not an allowed decode node")
        .Increment();
    SG_LOG_WARN("prefill", "{}: refused the prefill of request {} from {}: decode address {} is not in "
                "--allow-decode", config_.name, call->request_id.ToHex(), req.remote_addr, call->decode_address);
    ReplyStatus(res, PermissionDenied("decode address {} is not an allowed decode node",
                                      call->decode_address));
    res.status = 403;  // authenticated, but not allowed (401 is for a missing or bad signature)
    return;
  }
  const std::uint64_t handle = call->request_id.link_handle();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!owners_.emplace(handle, Owner{call->request_id, CallerOf(req)}).second) {
      return ReplyStatus(res, InvalidArgument("request {} (KV link handle {}) is already known here",
                                              call->request_id.ToHex(), handle));
    }
  }
  auto job = std::make_shared<Job>();
  job->call = std::move(*call);
  const core::Deadline deadline = core::Deadline::After(job->call.timeout_ms * core::kNanosPerMilli);
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(job);
    queue_depth_->Set(static_cast<double>(queue_.size()));
  }
  cv_.notify_all();
  std::unique_lock<std::mutex> lock(job->mu);
  if (!job->cv.wait_for(lock, std::chrono::nanoseconds(deadline.Remaining()), [&] { return job->done; })) {
    job->cancelled.store(true);
    return ReplyStatus(res, DeadlineExceeded("prefill of request {} timed out", job->call.request_id.ToHex()));
  }
  if (!job->result.ok()) return ReplyStatus(res, job->result.status());
  ReplyJson(res, ToJson(*job->result));
}

void PrefillNode::HandleCancel(const httplib::Request& req, httplib::Response& res) {
  auto body = ParseJsonText(req.body);
  Result<RequestId> id = body.ok() ? ParseRequestRef(*body, "cancel") : Result<RequestId>(body.status());
  if (!id.ok()) return ReplyStatus(res, id.status());
  const std::uint64_t handle = id->link_handle();
  const std::string caller = CallerOf(req);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = owners_.find(handle);
    if (it == owners_.end() || it->second.id != *id) {
      SG_LOG_INFO("prefill", "{}: cancel of request {} from {} ({}): not known here", config_.name,
                  id->ToHex(), caller, req.remote_addr);
      return ReplyStatus(res, NotFound("request {} is not known here", id->ToHex()));
    }
    if (it->second.caller != caller) {
      call_refused_->Increment();
      SG_LOG_WARN("prefill", "{}: refused the cancel of request {} from '{}' ({}): registered by '{}'",
                  config_.name, id->ToHex(), caller, req.remote_addr, it->second.caller);
      ReplyStatus(res, PermissionDenied("request {} was registered by another router", id->ToHex()));
      res.status = 403;  // signed, but not the request's router
      return;
    }
    for (auto& job : queue_) {
      if (job->call.request_id == *id) job->cancelled.store(true);
    }
  }
  endpoint_->CancelRequest(handle);
  ReplyJson(res, json::object());
}

void PrefillNode::Worker() {
  while (true) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) break;
      job = queue_.front();
      queue_.pop_front();
      queue_depth_->Set(static_cast<double>(queue_.size()));
    }
    Result<PrefillReply> result = Status(StatusCode::kCancelled, "cancelled before it ran");
    if (!job->cancelled.load()) {
      result = RunPrefill(job->call);
      if (result.ok()) result->queue_ms = core::ToMillis(core::NowNanos() - job->enqueued) - result->prefill_ms;
    }
    {
      // Its KV is gone or was never made: the id is free again (else the lease's release frees it).
      const std::uint64_t handle = job->call.request_id.link_handle();
      std::lock_guard<std::mutex> lock(mu_);
      if (!store_.Contains(handle)) owners_.erase(handle);
    }
    {
      std::lock_guard<std::mutex> lock(job->mu);
      job->result = std::move(result);
      job->done = true;
    }
    job->cv.notify_all();
  }
  // Stopping: fail what is queued.
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& job : queue_) {
    std::lock_guard<std::mutex> jl(job->mu);
    job->result = Cancelled("the prefill node is stopping");
    job->done = true;
    job->cv.notify_all();
  }
  queue_.clear();
}

}  // namespace smartgen::node
