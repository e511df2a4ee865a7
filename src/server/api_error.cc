#include "server/api_error.h"

namespace smartgen::server {
namespace {

std::string TypeFor(int http_status) {
  if (http_status == 401) return "authentication_error";
  if (http_status == 429) return "rate_limit_error";
  if (http_status >= 500) return "server_error";
  return "invalid_request_error";
}

nlohmann::json NullIfEmpty(const std::string& s) {
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
}

}  // namespace

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kUnimplemented:
      return 400;
    case StatusCode::kPermissionDenied:
      return 401;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kResourceExhausted:
      return 429;
    case StatusCode::kCancelled:
      return 499;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kDeadlineExceeded:
      return 504;
    case StatusCode::kDataLoss:
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

ApiError ApiErrorFromStatus(const Status& status, std::string param) {
  ApiError e;
  e.http_status = HttpStatusFor(status.code());
  e.message = std::string(status.message());
  if (e.message.empty()) e.message = std::string(StatusCodeName(status.code()));
  e.type = TypeFor(e.http_status);
  e.param = std::move(param);
  if (status.code() == StatusCode::kDeadlineExceeded) e.code = "timeout";
  if (status.code() == StatusCode::kUnavailable) e.code = "service_unavailable";
  if (status.code() == StatusCode::kPermissionDenied) e.code = "invalid_api_key";
  if (status.code() == StatusCode::kResourceExhausted) e.code = "rate_limit_exceeded";
  return e;
}

ApiError MakeApiError(int http_status, std::string message, std::string code, std::string param) {
  ApiError e;
  e.http_status = http_status;
  e.message = std::move(message);
  e.type = TypeFor(http_status);
  e.code = std::move(code);
  e.param = std::move(param);
  return e;
}

nlohmann::json ApiErrorJson(const ApiError& error) {
  return {{"error",
           {{"message", error.message},
            {"type", error.type},
            {"param", NullIfEmpty(error.param)},
            {"code", NullIfEmpty(error.code)}}}};
}

}  // namespace smartgen::server
