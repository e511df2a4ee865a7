// Exports the transfer engine's counters (transfer::Metrics) in Prometheus text format, under
// smartgen_transfer_*, for the nodes' /metrics.
#pragma once

#include <string>

#include "transfer/metrics.h"

namespace smartgen::node {

void AppendTransferMetrics(const transfer::Metrics& m, std::string* out);

}  // namespace smartgen::node
