#include "transfer/ucx/ucx_context.h"

#include <fmt/format.h>

namespace smartgen::transfer {

Status UcxStatus(ucs_status_t status, std::string_view what) {
  StatusCode code = StatusCode::kInternal;
  switch (status) {
    case UCS_OK: return Status::Ok();
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_REJECTED:
    case UCS_ERR_IO_ERROR:
    case UCS_ERR_BUSY: code = StatusCode::kUnavailable; break;
    case UCS_ERR_CANCELED: code = StatusCode::kCancelled; break;
    case UCS_ERR_TIMED_OUT: code = StatusCode::kDeadlineExceeded; break;
    case UCS_ERR_NO_MEMORY:
    case UCS_ERR_NO_RESOURCE:
    case UCS_ERR_EXCEEDS_LIMIT: code = StatusCode::kResourceExhausted; break;
    case UCS_ERR_MESSAGE_TRUNCATED: code = StatusCode::kDataLoss; break;
    case UCS_ERR_UNSUPPORTED:
    case UCS_ERR_NO_DEVICE: code = StatusCode::kUnimplemented; break;
    case UCS_ERR_INVALID_PARAM: code = StatusCode::kInvalidArgument; break;
    default: break;
  }
  return Status(code, fmt::format("{}: UCX {}", what, ucs_status_string(status)));
}

Result<std::shared_ptr<UcxContext>> UcxContext::Create(const std::string& tls) {
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return UcxStatus(st, "ucp_config_read");
  if (!tls.empty()) {
    st = ucp_config_modify(config, "TLS", tls.c_str());
    if (st != UCS_OK) {
      ucp_config_release(config);
      return UcxStatus(st, fmt::format("UCX TLS '{}'", tls));
    }
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 1;
  std::shared_ptr<UcxContext> context(new UcxContext());
  st = ucp_init(&params, config, &context->context_);
  ucp_config_release(config);
  if (st != UCS_OK) return UcxStatus(st, "ucp_init");
  return context;
}

UcxContext::~UcxContext() {
  if (context_) ucp_cleanup(context_);
}

Result<UcxWorker> UcxWorker::Create(const std::shared_ptr<UcxContext>& context) {
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = UCS_THREAD_MODE_SINGLE;
  UcxWorker worker;
  worker.context_ = context;
  const ucs_status_t st = ucp_worker_create(context->get(), &params, &worker.worker_);
  if (st != UCS_OK) return UcxStatus(st, "ucp_worker_create");
  return worker;
}

UcxWorker& UcxWorker::operator=(UcxWorker&& other) noexcept {
  if (this != &other) {
    if (worker_) ucp_worker_destroy(worker_);
    worker_ = other.worker_;
    context_ = std::move(other.context_);
    other.worker_ = nullptr;
  }
  return *this;
}

UcxWorker::~UcxWorker() {
  if (worker_) ucp_worker_destroy(worker_);
}

Result<std::string> UcxWorker::Address() const {
  ucp_address_t* address = nullptr;
  std::size_t length = 0;
  const ucs_status_t st = ucp_worker_get_address(worker_, &address, &length);
  if (st != UCS_OK) return UcxStatus(st, "ucp_worker_get_address");
  std::string out(reinterpret_cast<const char*>(address), length);
  ucp_worker_release_address(worker_, address);
  return out;
}

Result<int> UcxWorker::EventFd() const {
  int fd = -1;
  const ucs_status_t st = ucp_worker_get_efd(worker_, &fd);
  if (st != UCS_OK) return UcxStatus(st, "ucp_worker_get_efd");
  return fd;
}

}  // namespace smartgen::transfer
