// Configuration shared by the prefill and decode nodes, and the runtime both build from it:
// the model, compute threads, KV block pool, and the transfer endpoint's settings.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "kv/block_pool.h"
#include "model/forward.h"
#include "model/model.h"
#include "node/common/control_tls.h"
#include "select/profile.h"
#include "transfer/endpoint.h"

namespace smartgen::node {

// The token a node uses when none is given. It is public: a node refuses to listen on anything
// but loopback with it (CheckTokenForAddresses).
inline constexpr const char* kBuiltInToken = "smartgen";

struct NodeConfig {
  std::string name;                          // for logs and /internal/info
  std::string model_path;
  std::string http_host = "127.0.0.1";       // internal control-plane HTTP
  int http_port = 0;                         // 0 = ephemeral
  std::string transfer_address = "127.0.0.1:0";  // decode nodes listen here for KV
  // Decode nodes: the KV address handed to peers (NodeInfo::transfer_address), "host:port",
  // "[v6]:port", or a host alone ("[v6]" or a bare "v6") / port 0 for the bound port; "" = the
  // bound address. Needed
  // when peers reach this node at another address than it binds (0.0.0.0, NAT, a name).
  std::string advertise;
  // Prefill nodes: the decode nodes this node may send KV to (their KV addresses: "host:port",
  // "[v6]:port", or a host alone for any port; a bare IPv6 address is a host), e.g. the router's
  // decode pool; a prefill call
  // naming another address is refused with 403. Empty = any address (loopback runs, tests).
  std::vector<std::string> allowed_decode;
  std::string transport = "tcp";             // tcp | ucx | loopback
  std::string token = kBuiltInToken;         // node-to-node shared secret (control plane, KV link)
  ControlTls control_tls;                    // HTTPS + client certificates on /internal/* (off: HTTP)
  double link_gbps = 0;                      // emulated link rate for KV sent (0 = unshaped)
  double link_latency_ms = 0;                // emulated one-way latency
  int threads = 2;
  // The CPUs this node runs on ("0-3,8"; "" = any): the process is confined to them and compute
  // thread i pinned to the i-th (core/cpu_placement.h), so nodes sharing a machine keep apart.
  std::string cpus;
  std::string kv_dtype = "f16";
  int block_tokens = 16;
  std::int64_t kv_capacity_tokens = 1 << 17; // KV pool size, in tokens of one sequence
  // KV pool made resident at start-up, in tokens of one sequence (capped by the capacity; 0 =
  // none): requests within it take no page faults on their way to tokens 1 and 2 (a prefill
  // node holds a prompt's KV and SmartGen's first-step copy of it; docs/RESULTS.md, "First touch").
  std::int64_t kv_prefault_tokens = 1 << 14;
  std::int64_t max_context = 0;              // 0 = the model's context length
  int max_batch = 64;                        // decode node: sequences per step
  // Prefill node: one throwaway prefill of this many tokens at start-up (0 = none). It pages
  // the weights in and seeds the prefill-time estimate that sizes SmartGen's proactive set.
  std::int64_t warmup_tokens = 256;
  // Weights read into transparent huge pages instead of mapped from the file
  // (core::FilePlacement::kHugePages): a node reads them in bursts between idle waits, and on a
  // VM 4 KiB pages read after idle cost 15-30x their streaming time (docs/RESULTS.md, "First touch").
  bool weights_huge_pages = true;
  bool fast_dot = true;   // decode with VNNI / BF16 dot products (kernels::SetFastDot), as run does
  std::vector<std::string> profile_paths;    // SmartGen profiles (one per prompt-length bucket)
  // The deadline of each waiting phase of a decode request (decode/request_state.h), and the
  // KV link's silence after which a peer is dead (its requests fall back or fail over).
  double prefill_start_timeout_s = 30;  // registered until the prefill node begins
  double kv_progress_timeout_s = 10;    // longest prefill-side silence while awaiting KV
  double step_timeout_s = 5;            // longest KV wait of one decode step
  double heartbeat_timeout_s = 3;
};

// kFailedPrecondition when the node would listen on a non-loopback address (HTTP or KV) with
// the built-in token: other hosts could then call it as the router.
Status CheckTokenForAddresses(const NodeConfig& config);
// Whether `host` is a loopback address or name (127.0.0.0/8, ::1, localhost).
bool IsLoopbackHost(std::string_view host);

// What a node builds from its config, in dependency order.
struct NodeRuntime {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<core::ThreadPool> pool;
  std::unique_ptr<model::Forward> forward;
  std::unique_ptr<kv::BlockPool> blocks;
  transfer::EndpointConfig endpoint_config;  // handshake (model hash, geometry), token, link
  std::shared_ptr<transfer::Transport> transport;
  std::vector<select::Profile> profiles;     // validated against the model
};

// `transport` replaces the one config.transport names (tests inject a fault transport).
Result<NodeRuntime> BuildNodeRuntime(const NodeConfig& config,
                                     std::shared_ptr<transfer::Transport> transport = nullptr);

// The transfer engine's view of a KV geometry.
transfer::KvGeometry ToTransferGeometry(const kv::KvGeometry& g);

// The address a node hands to peers for the one it bound: `bound` when `advertise` is empty,
// else `advertise` with the bound port where it names none (or 0). kInvalidArgument when
// `advertise` is malformed. Warns when a wildcard bound address (0.0.0.0, [::]) is handed out.
Result<std::string> AdvertisedAddress(const std::string& advertise, const std::string& bound);

// Whether a prefill call may send KV to `address` (a decode node's KV address): `allowed` is
// empty, or an entry names its host (IP literals compared as addresses, names as text,
// case-insensitively) and its port or no port. kInvalidArgument for a malformed entry.
Result<bool> DecodeAddressAllowed(const std::vector<std::string>& allowed, const std::string& address);

// "host:port" split; kInvalidArgument when malformed.
Status SplitHostPort(const std::string& address, std::string* host, int* port);

}  // namespace smartgen::node
