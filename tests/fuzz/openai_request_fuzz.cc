// libFuzzer target: the OpenAI request parser of the public API, on both endpoints. Any body
// must give a request or kInvalidArgument naming a field; never a crash or an exception.
// With SMARTGEN_FUZZ_PLANTED_CRASH defined (the harness test of scripts/fuzz.sh only), an
// input starting with "PLANTED" crashes on purpose, so that the harness is shown to fail.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "server/openai_request.h"

namespace s = smartgen::server;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
#ifdef SMARTGEN_FUZZ_PLANTED_CRASH
  if (size >= 7 && std::memcmp(data, "PLANTED", 7) == 0) __builtin_trap();
#endif
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (s::Endpoint e : {s::Endpoint::kCompletions, s::Endpoint::kChatCompletions}) {
    std::string param;
    auto r = s::ParseCompletionRequest(body, e, &param);
    if (r.ok()) {
      // What the server reads from an accepted request is within the documented bounds.
      if (r->stop.size() > static_cast<std::size_t>(s::kMaxStopSequences)) __builtin_trap();
      for (const std::string& stop : r->stop) {
        if (stop.empty() || stop.size() > s::kMaxStopBytes) __builtin_trap();
      }
      if (r->max_tokens && *r->max_tokens < 1) __builtin_trap();
    } else if (r.status().code() != smartgen::StatusCode::kInvalidArgument &&
               r.status().code() != smartgen::StatusCode::kUnimplemented) {
      __builtin_trap();
    }
  }
  return 0;
}
