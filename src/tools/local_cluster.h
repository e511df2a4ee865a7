// LocalCluster: a whole deployment on this machine as separate processes - prefill node(s),
// decode node(s) and the router - over an emulated link, for `bench ttst` and `demo`. With
// `netns`, the prefill and the decode node run each in its own network namespace and the KV
// link crosses a veth shaped by tc instead (netns_link.h). Stops every process on destruction,
// then deletes the namespaces.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "tools/child_process.h"
#include "tools/netns_link.h"

namespace smartgen::tools {

struct LocalClusterOptions {
  std::string model_path;
  double link_gbps = 0;          // emulated prefill->decode link (0 = unshaped)
  double link_latency_ms = 0;
  int prefill_threads = 2;
  int decode_threads = 2;
  std::string prefill_cpus;  // each node's --cpus ("" = any CPU, unpinned)
  std::string decode_cpus;
  std::string kv_dtype = "f16";
  int block_tokens = 16;
  std::string transport = "tcp";
  std::string default_mode = "layerwise";
  std::string log_dir = "out/logs";
  std::vector<std::string> extra_node_args;  // appended to both nodes' command lines
  // A real link: prefill and decode node in namespaces joined by a veth shaped by `tc tbf` to
  // link_gbps (the engine's own token bucket off) with netns_delay_ms of `tc netem` delay each
  // way. Needs root and iproute2 (Start fails with the reason otherwise). Where the kernel has
  // no sch_netem, the delay is the engine's emulated latency instead, and Start says so.
  bool netns = false;
  double netns_delay_ms = 0;
};

class LocalCluster {
 public:
  static Result<LocalCluster> Start(const LocalClusterOptions& options);
  int router_port() const { return router_port_; }
  void Stop();

  // POST /v1/completions with `body`; the parsed response (errors as Status).
  Result<nlohmann::json> Complete(const nlohmann::json& body, int timeout_s = 600) const;

 private:
  NetnsLink link_;                       // with options.netns; deleted after the processes
  std::vector<ChildProcess> processes_;  // stopped in reverse order
  int router_port_ = 0;
};

}  // namespace smartgen::tools
