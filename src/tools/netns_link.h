// NetnsLink: a real, shaped network link for benchmarks (issue 15). Two network namespaces,
// one for the prefill node and one for the decode node, joined by a veth pair on private
// addresses; the KV link crosses it. The prefill side's egress (KV pushes, pull replies) is
// shaped with `tc tbf` to a rate, and both directions get `tc netem` delay when one is asked
// for and the kernel has sch_netem. Each namespace also has an unshaped veth to this host, so
// the router (on the host) reaches both nodes' HTTP without touching the shaped link:
//
//   host ──veth (unshaped)── [ns P: prefill] ══veth, tbf rate + netem delay══ [ns D: decode]
//     └────────veth (unshaped)─────────────────────────────────────────────────────┘
//
// Needs root and iproute2 (`ip`, `tc`); Create() says why not otherwise (kFailedPrecondition).
// Move-only RAII: the destructor deletes both namespaces (their veths go with them). Names carry
// this process's id; Create() first deletes namespaces left behind by processes that are gone.
// Not thread-safe; one link per LocalCluster.
#pragma once

#include <string>

#include "core/result.h"

namespace smartgen::tools {

struct NetnsLinkOptions {
  double rate_gbps = 0;   // tbf rate of the prefill -> decode direction (0 = unshaped)
  double delay_ms = 0;    // netem delay added in each direction (0 = none)
};

class NetnsLink {
 public:
  static Result<NetnsLink> Create(const NetnsLinkOptions& options);
  NetnsLink() = default;
  NetnsLink(NetnsLink&& other) noexcept;
  NetnsLink& operator=(NetnsLink&& other) noexcept;
  NetnsLink(const NetnsLink&) = delete;
  NetnsLink& operator=(const NetnsLink&) = delete;
  ~NetnsLink();

  // Namespace names (for setns / `ip netns exec`).
  const std::string& prefill_ns() const { return prefill_ns_; }
  const std::string& decode_ns() const { return decode_ns_; }
  // Each node's address on its unshaped veth to the host (its HTTP listens there).
  const std::string& prefill_control_ip() const { return prefill_control_ip_; }
  const std::string& decode_control_ip() const { return decode_control_ip_; }
  // The decode node's address on the shaped veth (its KV listener).
  const std::string& decode_link_ip() const { return decode_link_ip_; }
  // Whether the netem delay is in place (false when none was asked for or sch_netem is missing;
  // then `why_no_delay` says which).
  bool delay_applied() const { return delay_applied_; }
  const std::string& why_no_delay() const { return why_no_delay_; }
  // One line for logs: namespaces, addresses, rate, delay.
  std::string Describe() const;

 private:
  void Destroy();

  std::string prefill_ns_, decode_ns_;
  std::string prefill_control_ip_, decode_control_ip_, decode_link_ip_;
  NetnsLinkOptions options_;
  bool delay_applied_ = false;
  std::string why_no_delay_;
};

// Empty when this process can create network namespaces and shape veths (root, iproute2),
// else the reason it cannot.
std::string NetnsUnavailableReason();

}  // namespace smartgen::tools
