// ApiError: an OpenAI-style error response,
//   HTTP <status>  {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
// and the one mapping from smartgen Status codes to HTTP statuses used by the server.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace smartgen::server {

struct ApiError {
  int http_status = 500;
  std::string message;
  std::string type;   // "invalid_request_error", "authentication_error", "rate_limit_error",
                      // "server_error"
  std::string param;  // the request field at fault; "" -> null
  std::string code;   // e.g. "invalid_api_key", "context_length_exceeded"; "" -> null
};

// HTTP status for a Status code (OK -> 200):
//   kInvalidArgument, kOutOfRange, kFailedPrecondition, kUnimplemented -> 400
//   kPermissionDenied -> 401   kNotFound -> 404   kResourceExhausted -> 429
//   kCancelled -> 499 (client closed the request; never seen by that client)
//   kUnavailable -> 503   kDeadlineExceeded -> 504   kDataLoss, kInternal -> 500
int HttpStatusFor(StatusCode code);

// The error for a non-OK `status`, with the type that goes with its HTTP status.
ApiError ApiErrorFromStatus(const Status& status, std::string param = {});
// An error with an explicit HTTP status, its default type, and `code`.
ApiError MakeApiError(int http_status, std::string message, std::string code = {},
                      std::string param = {});

// {"error": {...}}
nlohmann::json ApiErrorJson(const ApiError& error);

}  // namespace smartgen::server
