// Owning wrappers of UCX UCP objects, shared by the ucx transport's connections. A UcxContext
// is one ucp_context (workers of several threads share it); each connection owns its worker.
#pragma once

#include <ucp/api/ucp.h>

#include <memory>
#include <string>

#include "core/result.h"

namespace smartgen::transfer {

// "UCX error: <ucs_status_string>" with a code: unreachable/timeout -> kUnavailable, etc.
Status UcxStatus(ucs_status_t status, std::string_view what);

class UcxContext {
 public:
  // `tls`: UCX transports to use ("tcp", "sm,self", "rc,ud"...); empty = UCX_TLS or UCX's choice.
  static Result<std::shared_ptr<UcxContext>> Create(const std::string& tls);
  ~UcxContext();
  UcxContext(const UcxContext&) = delete;
  UcxContext& operator=(const UcxContext&) = delete;

  ucp_context_h get() const { return context_; }

 private:
  UcxContext() = default;
  ucp_context_h context_ = nullptr;
};

// A ucp_worker used by exactly one thread at a time (UCS_THREAD_MODE_SINGLE). Move-only.
class UcxWorker {
 public:
  static Result<UcxWorker> Create(const std::shared_ptr<UcxContext>& context);
  UcxWorker() = default;
  UcxWorker(UcxWorker&& other) noexcept { *this = std::move(other); }
  UcxWorker& operator=(UcxWorker&& other) noexcept;
  ~UcxWorker();

  ucp_worker_h get() const { return worker_; }
  // The worker's address, for the peer's ucp_ep_create.
  Result<std::string> Address() const;
  // The file descriptor that signals events after ucp_worker_arm().
  Result<int> EventFd() const;

 private:
  std::shared_ptr<UcxContext> context_;  // outlives the worker
  ucp_worker_h worker_ = nullptr;
};

}  // namespace smartgen::transfer
