#include "node/common/node_config.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "core/log.h"
#include "kernels/matmul.h"
#include "transfer/socket.h"
#include "transfer/transport_factory.h"

namespace smartgen::node {

transfer::KvGeometry ToTransferGeometry(const kv::KvGeometry& g) {
  transfer::KvGeometry t;
  t.n_layers = static_cast<std::uint32_t>(g.n_layers);
  t.n_kv_heads = static_cast<std::uint32_t>(g.n_kv_heads);
  t.head_dim = static_cast<std::uint32_t>(g.head_dim);
  t.block_tokens = static_cast<std::uint32_t>(g.block_tokens);
  t.dtype = g.dtype == kv::KvDType::kF16 ? transfer::KvDType::kF16 : transfer::KvDType::kF32;
  return t;
}

Status SplitHostPort(const std::string& address, std::string* host, int* port) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    return InvalidArgument("address '{}' is not host:port", address);
  }
  try {
    *port = std::stoi(address.substr(colon + 1));
  } catch (...) {
    return InvalidArgument("address '{}' has a bad port", address);
  }
  if (*port < 0 || *port > 65535) return InvalidArgument("address '{}' has a bad port", address);
  *host = address.substr(0, colon);
  if (host->size() > 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  return Status::Ok();
}

namespace {

// "host", "host:port", "[v6]", "[v6]:port" or a bare IPv6 address ("fd00::3": no port; CLI11
// takes the brackets off a lone "[fd00::3]"); port 0 when none is given. kInvalidArgument for
// anything else, a wildcard host included.
Result<transfer::HostPort> ParseHostMaybePort(const std::string& text, std::string_view what) {
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1 && !IN6_IS_ADDR_UNSPECIFIED(&v6)) {
    return transfer::HostPort{text, 0};
  }
  const bool has_port = !text.empty() && text.back() != ']' && text.find(':') != std::string::npos;
  auto hp = transfer::ParseHostPort(has_port ? text : text + ":0");
  if (!hp.ok() || hp->host.empty() || hp->host == "*") {
    return InvalidArgument("{} '{}' is not host[:port] (IPv6 in brackets: [fd00::3]:9201)", what, text);
  }
  return *hp;
}

bool SameHost(const std::string& a, const std::string& b) {
  in6_addr a6{}, b6{};
  in_addr a4{}, b4{};
  if (inet_pton(AF_INET6, a.c_str(), &a6) == 1 && inet_pton(AF_INET6, b.c_str(), &b6) == 1) {
    return std::memcmp(&a6, &b6, sizeof(a6)) == 0;
  }
  if (inet_pton(AF_INET, a.c_str(), &a4) == 1 && inet_pton(AF_INET, b.c_str(), &b4) == 1) {
    return a4.s_addr == b4.s_addr;
  }
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

Result<std::string> AdvertisedAddress(const std::string& advertise, const std::string& bound) {
  SG_ASSIGN_OR_RETURN(transfer::HostPort b, transfer::ParseHostPort(bound));
  if (advertise.empty()) {
    if (b.host.empty() || b.host == "0.0.0.0" || b.host == "::" || b.host == "*") {
      SG_LOG_WARN("node", "handing out the wildcard address {} to peers: give --advertise", bound);
    }
    return bound;
  }
  // A host alone ("10.0.0.3", "[fd00::3]", "decode-1") takes the bound port.
  SG_ASSIGN_OR_RETURN(transfer::HostPort a, ParseHostMaybePort(advertise, "--advertise"));
  return transfer::FormatHostPort(a.host, a.port != 0 ? a.port : b.port);
}

Result<bool> DecodeAddressAllowed(const std::vector<std::string>& allowed, const std::string& address) {
  if (allowed.empty()) return true;
  auto target = transfer::ParseHostPort(address);
  if (!target.ok()) return false;
  for (const std::string& entry : allowed) {
    SG_ASSIGN_OR_RETURN(transfer::HostPort a, ParseHostMaybePort(entry, "allowed decode node"));
    if (SameHost(a.host, target->host) && (a.port == 0 || a.port == target->port)) return true;
  }
  return false;
}

bool IsLoopbackHost(std::string_view host) {
  if (!host.empty() && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

Status CheckTokenForAddresses(const NodeConfig& c) {
  if (c.token.empty()) return InvalidArgument("the node token must not be empty");
  if (c.token != kBuiltInToken) return Status::Ok();
  std::string kv_host;
  int kv_port = 0;
  if (!SplitHostPort(c.transfer_address, &kv_host, &kv_port).ok()) kv_host = c.transfer_address;
  for (const std::string& host : {c.http_host, kv_host}) {
    if (!IsLoopbackHost(host)) {
      return FailedPrecondition(
          "{} would listen on {} with the built-in token: give it --token or --token-file (the same "
          "secret on every node and the router)",
          c.name, host);
    }
  }
  return Status::Ok();
}

Result<NodeRuntime> BuildNodeRuntime(const NodeConfig& c,
                                     std::shared_ptr<transfer::Transport> transport) {
  if (c.threads < 1 || c.threads > 256) return InvalidArgument("threads {} out of range", c.threads);
  SG_RETURN_IF_ERROR(CheckTokenForAddresses(c));
  if (!c.advertise.empty()) SG_RETURN_IF_ERROR(AdvertisedAddress(c.advertise, "0.0.0.0:1").status());
  SG_RETURN_IF_ERROR(DecodeAddressAllowed(c.allowed_decode, "0.0.0.0:1").status());
  kernels::SetFastDot(c.fast_dot);
  if (c.block_tokens < 1 || c.block_tokens > 1024) {
    return InvalidArgument("block_tokens {} out of range", c.block_tokens);
  }
  kv::KvDType dtype;
  if (c.kv_dtype == "f16") {
    dtype = kv::KvDType::kF16;
  } else if (c.kv_dtype == "f32") {
    dtype = kv::KvDType::kF32;
  } else {
    return InvalidArgument("kv dtype '{}' is not f16 or f32", c.kv_dtype);
  }
  NodeRuntime r;
  // Placed first: the weights' pages are then first touched on the node's own CPUs.
  SG_ASSIGN_OR_RETURN(r.pool, core::ThreadPool::CreateOn(c.threads, c.cpus));
  SG_ASSIGN_OR_RETURN(r.model, model::Model::Load(c.model_path, c.weights_huge_pages
                                                                     ? core::FilePlacement::kHugePages
                                                                     : core::FilePlacement::kMapped));
  r.forward = std::make_unique<model::Forward>(*r.model, r.pool.get(),
                                               model::ForwardOptions{c.max_context});
  const kv::KvGeometry geometry = r.forward->KvGeometryFor(dtype, c.block_tokens);
  const std::int64_t blocks =
      geometry.BlocksFor(c.kv_capacity_tokens) * geometry.n_layers * geometry.n_kv_heads;
  r.blocks = std::make_unique<kv::BlockPool>(geometry, blocks);
  if (c.kv_prefault_tokens < 0) return InvalidArgument("kv_prefault_tokens must not be negative");
  r.blocks->Prefault(geometry.BlocksFor(c.kv_prefault_tokens) * geometry.n_layers * geometry.n_kv_heads);

  transfer::EndpointConfig& e = r.endpoint_config;
  e.name = c.name;
  e.handshake.model_hash = r.model->fingerprint();
  e.handshake.geometry = ToTransferGeometry(geometry);
  e.token = c.token;
  e.link.gbps = c.link_gbps;
  e.link.latency = static_cast<core::Nanos>(c.link_latency_ms * core::kNanosPerMilli);
  if (!(c.heartbeat_timeout_s > 0)) return InvalidArgument("heartbeat timeout must be positive");
  e.heartbeat_timeout = core::Seconds(c.heartbeat_timeout_s);
  e.heartbeat_interval = std::min(e.heartbeat_interval, e.heartbeat_timeout / 4);
  if (transport) {
    r.transport = std::move(transport);
  } else {
    SG_ASSIGN_OR_RETURN(r.transport, transfer::MakeTransport(c.transport));
  }
  for (const std::string& path : c.profile_paths) {
    SG_ASSIGN_OR_RETURN(select::Profile profile, select::LoadProfile(path));
    SG_RETURN_IF_ERROR(profile.Validate(r.model->config(), r.model->fingerprint(), c.block_tokens)
                           .WithContext(fmt::format("profile '{}'", path)));
    r.profiles.push_back(std::move(profile));
  }
  return r;
}

}  // namespace smartgen::node
