// Status: the one error model of smartgen (STYLE.md rule 3).
//
// Every fallible function returns `Status` or `Result<T>` (result.h). The code says what the
// caller should do next:
//   kInvalidArgument    - the input is wrong; retrying the same input will fail again.
//   kNotFound           - a named thing (file, tensor, key, request) does not exist.
//   kOutOfRange         - a value or position is past a limit (context length, file end).
//   kFailedPrecondition - the system is not in a state where this works (handshake mismatch).
//   kDataLoss           - bytes were corrupted or truncated (checksum, malformed file).
//   kUnavailable        - transient: a peer or link is down; retry with backoff.
//   kDeadlineExceeded   - a wait ran past its deadline.
//   kResourceExhausted  - a limit is full (queue, memory, concurrent requests); retry later.
//   kCancelled          - the caller or the peer cancelled the operation.
//   kPermissionDenied   - authentication failed (bad token or API key).
//   kUnimplemented      - the feature or type is not supported.
//   kInternal           - a bug: an invariant did not hold.
// No exception crosses a layer boundary; code that calls throwing libraries converts here.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace smartgen {

enum class StatusCode : unsigned char {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kOutOfRange,
  kFailedPrecondition,
  kDataLoss,
  kUnavailable,
  kDeadlineExceeded,
  kResourceExhausted,
  kCancelled,
  kPermissionDenied,
  kUnimplemented,
  kInternal,
};

// "INVALID_ARGUMENT", ... ; stable strings used in logs and JSON errors.
std::string_view StatusCodeName(StatusCode code);

// Whether an operation that failed with `code` may succeed if retried unchanged.
bool IsRetryable(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);

  static Status Ok() { return Status(); }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  std::string_view message() const { return rep_ ? std::string_view(rep_->message) : ""; }

  // "CODE: message", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>"; OK stays OK.
  Status WithContext(std::string_view context) const;

  // Explicitly discards a status where failure is acceptable; says so at the call site.
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code() == b.code() && a.message() == b.message();
  }

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const Rep> rep_;  // null when OK: an OK status costs one pointer.
};

// Constructors that format their message with fmt, e.g.
//   return InvalidArgument("tensor '{}' has {} dims, max {}", name, n, kMaxDims);
#define SMARTGEN_STATUS_CTOR(Name, Code)                                     \
  template <typename... Args>                                                \
  Status Name(fmt::format_string<Args...> format, Args&&... args) {          \
    return Status(StatusCode::Code, fmt::format(format, std::forward<Args>(args)...)); \
  }
SMARTGEN_STATUS_CTOR(InvalidArgument, kInvalidArgument)
SMARTGEN_STATUS_CTOR(NotFound, kNotFound)
SMARTGEN_STATUS_CTOR(OutOfRange, kOutOfRange)
SMARTGEN_STATUS_CTOR(FailedPrecondition, kFailedPrecondition)
SMARTGEN_STATUS_CTOR(DataLoss, kDataLoss)
SMARTGEN_STATUS_CTOR(Unavailable, kUnavailable)
SMARTGEN_STATUS_CTOR(DeadlineExceeded, kDeadlineExceeded)
SMARTGEN_STATUS_CTOR(ResourceExhausted, kResourceExhausted)
SMARTGEN_STATUS_CTOR(Cancelled, kCancelled)
SMARTGEN_STATUS_CTOR(PermissionDenied, kPermissionDenied)
SMARTGEN_STATUS_CTOR(Unimplemented, kUnimplemented)
SMARTGEN_STATUS_CTOR(Internal, kInternal)
#undef SMARTGEN_STATUS_CTOR

// Status from the current errno: "<what>: <strerror>", with a code that matches the errno
// (ENOENT -> kNotFound, ECONNRESET/EPIPE/ECONNREFUSED -> kUnavailable, ...).
Status ErrnoStatus(int err, std::string_view what);

}  // namespace smartgen

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define SG_RETURN_IF_ERROR(expr)                  \
  do {                                            \
    ::smartgen::Status sg_status_ = (expr);       \
    if (!sg_status_.ok()) return sg_status_;      \
  } while (0)
