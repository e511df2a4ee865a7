#include "core/status.h"

#include <cerrno>
#include <cstring>

namespace smartgen {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kDataLoss: return "DATA_LOSS";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kInternal: return "INTERNAL";
  }
  return "UNKNOWN";
}

bool IsRetryable(StatusCode code) {
  return code == StatusCode::kUnavailable || code == StatusCode::kDeadlineExceeded ||
         code == StatusCode::kResourceExhausted;
}

Status::Status(StatusCode code, std::string message) {
  if (code != StatusCode::kOk) rep_ = std::make_shared<const Rep>(Rep{code, std::move(message)});
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return fmt::format("{}: {}", StatusCodeName(code()), message());
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code(), fmt::format("{}: {}", context, message()));
}

Status ErrnoStatus(int err, std::string_view what) {
  StatusCode code = StatusCode::kInternal;
  switch (err) {
    case ENOENT: code = StatusCode::kNotFound; break;
    case EACCES:
    case EPERM: code = StatusCode::kPermissionDenied; break;
    case EINVAL: code = StatusCode::kInvalidArgument; break;
    case ENOMEM:
    case EMFILE:
    case ENFILE:
    case ENOSPC: code = StatusCode::kResourceExhausted; break;
    case ETIMEDOUT: code = StatusCode::kDeadlineExceeded; break;
    case ECONNRESET:
    case ECONNREFUSED:
    case ECONNABORTED:
    case EPIPE:
    case ENOTCONN:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EAGAIN:
    case EADDRINUSE: code = StatusCode::kUnavailable; break;
    default: break;
  }
  return Status(code, fmt::format("{}: {}", what, std::strerror(err)));
}

}  // namespace smartgen
