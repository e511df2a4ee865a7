// Request bodies of the public API: the checks made before a byte of a body is read, and
// reading one within the limit. Pure functions over httplib's request and reader; the server
// answers with the ApiError they return and then closes the connection (the body, or its
// rest, stays unread).
//
// Before the body (CheckBodyFraming), in order:
//   400  Content-Length that is not a plain decimal number, or given twice
//   400  both Content-Length and Transfer-Encoding (two framings: request smuggling)
//   501  Transfer-Encoding other than exactly "chunked"
//   400  a body on a method that takes none (GET, HEAD, OPTIONS)
//   404  a body for a route that reads none (`takes_body` false; bodiless requests pass)
//   411  a body route without Content-Length or chunked encoding
//   413  Content-Length past max_body_bytes
// While reading (ReadBodyWithin): 413 as soon as what the body decodes to (after chunked and
// gzip/deflate decoding) passes max_body_bytes, so it is never buffered whole; 400 when the
// body cannot be read (malformed chunks or compression, a timeout, a cut connection).
// Thread-safety: stateless.
#pragma once

#include <httplib.h>

#include <cstddef>
#include <optional>
#include <string>

#include "server/api_error.h"

namespace smartgen::server {

// True for methods whose requests may carry a body (POST, PUT, PATCH, DELETE).
bool MethodTakesBody(const std::string& method);

// nullopt when the body (if any) may be read; else the error to answer with, unread.
std::optional<ApiError> CheckBodyFraming(const httplib::Request& req, bool takes_body,
                                         std::size_t max_body_bytes);

// Appends the body to `*body` through `reader`; nullopt when it was read whole.
std::optional<ApiError> ReadBodyWithin(const httplib::ContentReader& reader,
                                       std::size_t max_body_bytes, std::string* body);

// The 413 of a body past `max_body_bytes`.
ApiError BodyTooLarge(std::size_t max_body_bytes);

}  // namespace smartgen::server
