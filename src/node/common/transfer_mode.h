// How a request's KV gets from prefill to decode (DESIGN.md section 5).
#pragma once

#include <string_view>

#include "core/result.h"

namespace smartgen::node {

enum class TransferMode {
  kColocated,  // prefill and decode in one process: nothing crosses the link (the lower bound)
  kFull,       // the whole KV after prefill; decode starts after the last byte
  kLayerwise,  // each layer pushed as soon as prefill computes it (Mooncake/Splitwise style)
  kSmartgen,   // proactive + parallel on-demand + speculative (SmartGen)
  kAuto,       // smartgen or layerwise, chosen per request from the measured link rate
};

std::string_view TransferModeName(TransferMode mode);
// "colocated", "full", "layerwise", "smartgen", "auto"; kInvalidArgument otherwise.
Result<TransferMode> ParseTransferMode(std::string_view name);

}  // namespace smartgen::node
