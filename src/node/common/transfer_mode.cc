#include "node/common/transfer_mode.h"

namespace smartgen::node {

std::string_view TransferModeName(TransferMode mode) {
  switch (mode) {
    case TransferMode::kColocated: return "colocated";
    case TransferMode::kFull: return "full";
    case TransferMode::kLayerwise: return "layerwise";
    case TransferMode::kSmartgen: return "smartgen";
    case TransferMode::kAuto: return "auto";
  }
  return "unknown";
}

Result<TransferMode> ParseTransferMode(std::string_view name) {
  for (TransferMode m : {TransferMode::kColocated, TransferMode::kFull, TransferMode::kLayerwise,
                         TransferMode::kSmartgen, TransferMode::kAuto}) {
    if (TransferModeName(m) == name) return m;
  }
  return InvalidArgument("unknown transfer mode '{}' (colocated, full, layerwise, smartgen, auto)",
                         name);
}

}  // namespace smartgen::node
