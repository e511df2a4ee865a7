#include "server/request_body.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace smartgen::server {
namespace {

bool IsDecimal(const std::string& s) {
  return !s.empty() && s.size() <= 19 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

bool MethodTakesBody(const std::string& method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

ApiError BodyTooLarge(std::size_t max_body_bytes) {
  return MakeApiError(
      413, fmt::format("the request body is larger than the limit of {} bytes", max_body_bytes),
      "request_too_large");
}

std::optional<ApiError> CheckBodyFraming(const httplib::Request& req, bool takes_body,
                                         std::size_t max_body_bytes) {
  const bool has_length = req.has_header("Content-Length");
  const bool chunked = req.has_header("Transfer-Encoding");
  if (has_length && (!IsDecimal(req.get_header_value("Content-Length")) ||
                     req.get_header_value_count("Content-Length") > 1)) {
    return MakeApiError(400, "the Content-Length header is not one decimal number");
  }
  if (has_length && chunked) {
    // Two framings: a proxy in front may pick the other one (request smuggling).
    return MakeApiError(400, "the request has both Content-Length and Transfer-Encoding");
  }
  if (chunked) {
    std::string te = req.get_header_value("Transfer-Encoding");
    std::transform(te.begin(), te.end(), te.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (te != "chunked" || req.get_header_value_count("Transfer-Encoding") > 1) {
      return MakeApiError(501, fmt::format("Transfer-Encoding '{}' is not supported", te));
    }
  }
  const std::uint64_t length = has_length ? std::stoull(req.get_header_value("Content-Length")) : 0;
  const bool has_body = length > 0 || chunked;
  if (!MethodTakesBody(req.method)) {
    if (has_body) return MakeApiError(400, fmt::format("{} takes no body", req.method));
    return std::nullopt;
  }
  if (!takes_body) {
    if (!has_body) return std::nullopt;  // the router answers (404 or 405)
    return MakeApiError(404, fmt::format("unknown route: {} {}", req.method, req.path),
                        "unknown_route");
  }
  if (!has_length && !chunked) {
    return MakeApiError(411, "a request body needs a Content-Length or chunked Transfer-Encoding");
  }
  if (length > max_body_bytes) return BodyTooLarge(max_body_bytes);
  return std::nullopt;
}

std::optional<ApiError> ReadBodyWithin(const httplib::ContentReader& reader,
                                       std::size_t max_body_bytes, std::string* body) {
  bool too_large = false;
  const bool ok = reader([&](const char* data, std::size_t n) {
    if (body->size() + n > max_body_bytes) {
      too_large = true;
      return false;  // stop reading: the rest is never buffered
    }
    body->append(data, n);
    return true;
  });
  if (too_large) return BodyTooLarge(max_body_bytes);
  if (!ok) {
    return MakeApiError(400,
                        "the request body could not be read (malformed chunked encoding or "
                        "compression, too slow, or cut off)");
  }
  return std::nullopt;
}

}  // namespace smartgen::server
