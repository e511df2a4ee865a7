#include "node/common/transfer_metrics.h"

#include "core/metrics.h"

namespace smartgen::node {

void AppendTransferMetrics(const transfer::Metrics& m, std::string* out) {
  using core::AppendMetricHeader;
  using core::AppendMetricSample;
  AppendMetricHeader(out, "smartgen_transfer_block_bytes_sent_total",
                     "KV block payload bytes sent, by priority class", "counter");
  for (int p = 0; p < transfer::kNumPriorities; ++p) {
    const std::string name(transfer::PriorityName(static_cast<transfer::Priority>(p)));
    AppendMetricSample(out, "smartgen_transfer_block_bytes_sent_total", {{"priority", name}},
                       static_cast<double>(m.by_priority[p].bytes_sent));
  }
  AppendMetricHeader(out, "smartgen_transfer_block_bytes_received_total",
                     "KV block payload bytes received and verified, by priority class", "counter");
  for (int p = 0; p < transfer::kNumPriorities; ++p) {
    const std::string name(transfer::PriorityName(static_cast<transfer::Priority>(p)));
    AppendMetricSample(out, "smartgen_transfer_block_bytes_received_total", {{"priority", name}},
                       static_cast<double>(m.by_priority[p].bytes_received));
  }
  const struct {
    const char* name;
    const char* help;
    const char* type;
    double value;
  } scalars[] = {
      {"smartgen_transfer_wire_bytes_sent_total", "Every byte sent, headers included", "counter",
       double(m.wire_bytes_sent)},
      {"smartgen_transfer_wire_bytes_received_total", "Every byte received", "counter",
       double(m.wire_bytes_received)},
      {"smartgen_transfer_retries_total", "Block ranges sent or requested again", "counter",
       double(m.retries)},
      {"smartgen_transfer_rejected_corrupt_total", "Blocks whose frame failed its checksum",
       "counter", double(m.rejected_corrupt)},
      {"smartgen_transfer_rejected_stale_total", "Blocks of a finished or older transfer",
       "counter", double(m.rejected_stale)},
      {"smartgen_transfer_duplicates_total", "Blocks that arrived again and were dropped",
       "counter", double(m.duplicates)},
      {"smartgen_transfer_queue_depth_blocks", "Blocks waiting to be sent", "gauge",
       double(m.queue_depth_blocks)},
      {"smartgen_transfer_transfers_active", "Transfers in progress", "gauge",
       double(m.transfers_active)},
      {"smartgen_transfer_leases_active", "Requests whose KV is held for a peer", "gauge",
       double(m.leases_active)},
      {"smartgen_transfer_leases_expired_total", "Leases that ran out", "counter",
       double(m.leases_expired)},
      {"smartgen_transfer_peers_connected", "Connected peers", "gauge", double(m.peers_connected)},
      {"smartgen_transfer_peers_lost_total", "Connections that ended in an error", "counter",
       double(m.peers_lost)},
      {"smartgen_transfer_send_bytes_per_second", "Achieved send rate over the last second",
       "gauge", m.send_gbps * 1e9 / 8},
  };
  for (const auto& s : scalars) {
    AppendMetricHeader(out, s.name, s.help, s.type);
    AppendMetricSample(out, s.name, {}, s.value);
  }
}

}  // namespace smartgen::node
