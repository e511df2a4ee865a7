// API-key authentication for the OpenAI routes: `Authorization: Bearer <key>`.
#pragma once

#include <string_view>

#include "core/status.h"

namespace smartgen::server {

// OK when `api_key` is empty (authentication off) or `authorization_header` is
// "Bearer <api_key>" (scheme case-insensitive); else kPermissionDenied saying whether the
// header was missing or the key wrong. The key comparison takes the same time wherever the
// first difference is. Thread-safe.
Status CheckBearerToken(std::string_view authorization_header, std::string_view api_key);

}  // namespace smartgen::server
