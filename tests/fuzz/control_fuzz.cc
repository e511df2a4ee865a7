// libFuzzer target: the node control plane's decoders. The first byte picks the decoder:
// the binary control messages that ride the KV link (DecodeControl, type from the next 4
// bytes; a message that decodes must re-encode to the same bytes), or one of the JSON
// messages of the HTTP control plane (the rest parsed as JSON text, then by its parser).
// Keep this target to the decode functions: their names may change with node/common.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "node/common/control_messages.h"
#include "node/common/protocol.h"

namespace n = smartgen::node;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t which = data[0];
  data += 1;
  size -= 1;
  if (which % 2 == 0) {
    if (size < 4) return 0;
    std::uint32_t type;
    std::memcpy(&type, data, 4);
    type %= 10;  // the known types and a few unknown ones
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data + 4), size - 4);
    auto m = n::DecodeControl(type, bytes);
    if (m.ok() && m->type != n::ControlType::kPrefillFailed) {
      // (A failure's status is re-made on encoding; other messages round-trip exactly.)
      const std::vector<std::byte> again = n::EncodeControl(*m);
      if (again.size() != bytes.size() ||
          (!bytes.empty() && std::memcmp(again.data(), bytes.data(), bytes.size()) != 0)) {
        __builtin_trap();
      }
    }
    return 0;
  }
  auto j = n::ParseJsonText(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!j.ok()) return 0;
  switch ((which / 2) % 7) {
    case 0: (void)n::ParseNodeInfo(*j); break;
    case 1: (void)n::ParsePrefillCall(*j); break;
    case 2: (void)n::ParsePrefillReply(*j); break;
    case 3: (void)n::ParseDecodeCall(*j); break;
    case 4: (void)n::ParseDecodeEvent(*j); break;
    case 5: (void)n::ParseRequestRef(*j, "request ref"); break;
    default: (void)n::ParseSamplingParams(*j); break;
  }
  return 0;
}
