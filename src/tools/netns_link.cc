#include "tools/netns_link.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/log.h"

namespace smartgen::tools {
namespace {

constexpr const char* kNsPrefix = "smartgen-";

// Runs a shell command; its exit code, with stdout and stderr in `output`.
int Run(const std::string& command, std::string* output = nullptr) {
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof(buf), p) != nullptr) out += buf;
  const int rc = ::pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  if (output) *output = out;
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

Status RunStep(const std::string& command) {
  std::string out;
  if (Run(command, &out) != 0) return FailedPrecondition("'{}' failed: {}", command, out);
  return Status::Ok();
}

// Deletes namespaces named smartgen-<pid>-... whose process is gone (a bench killed mid-run).
void DeleteStaleNamespaces() {
  std::string list;
  if (Run("ip netns list", &list) != 0) return;
  std::istringstream lines(list);
  std::string line;
  while (std::getline(lines, line)) {
    const std::string name = line.substr(0, line.find(' '));
    if (name.rfind(kNsPrefix, 0) != 0) continue;
    const std::string rest = name.substr(std::string(kNsPrefix).size());
    const long pid = std::strtol(rest.c_str(), nullptr, 10);
    if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)) {
      SG_LOG_INFO("netns", "deleting namespace {} left by process {}", name, pid);
      Run("ip netns del " + name);
    }
  }
}

// A third octet for 10.231.X.0/24 that no address of this host uses yet.
int FreeOctet() {
  std::string addrs;
  Run("ip -4 -o addr show", &addrs);
  std::set<int> used;
  for (std::size_t at = addrs.find("10.231."); at != std::string::npos;
       at = addrs.find("10.231.", at + 1)) {
    used.insert(std::atoi(addrs.c_str() + at + 7));
  }
  const int start = static_cast<int>(getpid() % 250);
  for (int i = 0; i < 250; ++i) {
    const int x = (start + i) % 250;
    if (!used.count(x)) return x;
  }
  return start;
}

std::string TbfArgs(double gbps) {
  const double bytes_per_s = gbps * 1e9 / 8;
  const long burst = std::max(32L * 1024, static_cast<long>(bytes_per_s * 0.004));
  return fmt::format("tbf rate {}bit burst {} latency 50ms",
                     static_cast<long long>(std::llround(gbps * 1e9)), burst);
}

}  // namespace

std::string NetnsUnavailableReason() {
  if (::geteuid() != 0) return "needs root to create network namespaces";
  if (Run("ip -V") != 0) return "`ip` (iproute2) is not installed";
  if (Run("tc -V") != 0) return "`tc` (iproute2) is not installed";
  if (Run("ip netns list") != 0) return "`ip netns` does not work here";
  return "";
}

Result<NetnsLink> NetnsLink::Create(const NetnsLinkOptions& o) {
  const std::string why = NetnsUnavailableReason();
  if (!why.empty()) return FailedPrecondition("network namespaces: {}", why);
  if (o.rate_gbps < 0 || o.delay_ms < 0) return InvalidArgument("negative link rate or delay");
  DeleteStaleNamespaces();
  static std::atomic<int> counter{0};
  const int n = counter++ % 10;
  const std::string tag = fmt::format("{}{}", getpid() % 10000000, n);  // <= 8 characters
  NetnsLink link;
  link.options_ = o;
  link.prefill_ns_ = fmt::format("{}{}-{}-p", kNsPrefix, getpid(), n);
  link.decode_ns_ = fmt::format("{}{}-{}-d", kNsPrefix, getpid(), n);
  const std::string P = link.prefill_ns_, D = link.decode_ns_;
  const std::string net = fmt::format("10.231.{}.", FreeOctet());
  link.decode_link_ip_ = net + "2";
  link.prefill_control_ip_ = net + "6";
  link.decode_control_ip_ = net + "10";
  const std::string kv_p = "sgk" + tag + "p", kv_d = "sgk" + tag + "d";
  const std::string host_p = "sgh" + tag + "p", ns_p = "sgc" + tag + "p";
  const std::string host_d = "sgh" + tag + "d", ns_d = "sgc" + tag + "d";
  const std::string steps[] = {
      "ip netns add " + P,
      "ip netns add " + D,
      "ip -n " + P + " link set lo up",
      "ip -n " + D + " link set lo up",
      // The shaped KV link P <-> D.
      fmt::format("ip link add {} netns {} type veth peer name {} netns {}", kv_p, P, kv_d, D),
      fmt::format("ip -n {} addr add {}1/30 dev {}", P, net, kv_p),
      fmt::format("ip -n {} addr add {}2/30 dev {}", D, net, kv_d),
      fmt::format("ip -n {} link set {} up", P, kv_p),
      fmt::format("ip -n {} link set {} up", D, kv_d),
      // Unshaped control veths host <-> P and host <-> D.
      fmt::format("ip link add {} type veth peer name {} netns {}", host_p, ns_p, P),
      fmt::format("ip addr add {}5/30 dev {}", net, host_p),
      fmt::format("ip link set {} up", host_p),
      fmt::format("ip -n {} addr add {}6/30 dev {}", P, net, ns_p),
      fmt::format("ip -n {} link set {} up", P, ns_p),
      fmt::format("ip link add {} type veth peer name {} netns {}", host_d, ns_d, D),
      fmt::format("ip addr add {}9/30 dev {}", net, host_d),
      fmt::format("ip link set {} up", host_d),
      fmt::format("ip -n {} addr add {}10/30 dev {}", D, net, ns_d),
      fmt::format("ip -n {} link set {} up", D, ns_d),
  };
  for (const std::string& step : steps) {
    // On failure `link` goes out of scope and deletes whatever was made.
    SG_RETURN_IF_ERROR(RunStep(step));
  }
  // Delay first (netem at the root of both ends), the rate under it on the prefill side.
  std::string p_parent = "root handle 1:";
  if (o.delay_ms > 0) {
    const std::string delay = fmt::format("netem delay {}ms", o.delay_ms);
    std::string out;
    if (Run(fmt::format("tc -n {} qdisc add dev {} root handle 1: {}", P, kv_p, delay), &out) == 0 &&
        Run(fmt::format("tc -n {} qdisc add dev {} root handle 1: {}", D, kv_d, delay), &out) == 0) {
      link.delay_applied_ = true;
      p_parent = "parent 1: handle 2:";
    } else {
      Run(fmt::format("tc -n {} qdisc del dev {} root", P, kv_p));
      link.why_no_delay_ = fmt::format("tc netem is unavailable ({}): this kernel lacks sch_netem", out);
    }
  } else {
    link.why_no_delay_ = "no delay asked for";
  }
  if (o.rate_gbps > 0) {
    SG_RETURN_IF_ERROR(
        RunStep(fmt::format("tc -n {} qdisc add dev {} {} {}", P, kv_p, p_parent, TbfArgs(o.rate_gbps))));
  }
  SG_LOG_INFO("netns", "{}", link.Describe());
  return link;
}

std::string NetnsLink::Describe() const {
  return fmt::format(
      "netns link: prefill in {} ({}), decode in {} ({}, KV at {}), rate {}, delay {}",
      prefill_ns_, prefill_control_ip_, decode_ns_, decode_control_ip_, decode_link_ip_,
      options_.rate_gbps > 0 ? fmt::format("{:.4g} Gbit/s (tc tbf)", options_.rate_gbps) : "unshaped",
      delay_applied_ ? fmt::format("{} ms each way (netem)", options_.delay_ms)
                     : "none (" + why_no_delay_ + ")");
}

NetnsLink::NetnsLink(NetnsLink&& other) noexcept { *this = std::move(other); }

NetnsLink& NetnsLink::operator=(NetnsLink&& other) noexcept {
  if (this != &other) {
    Destroy();
    prefill_ns_ = std::move(other.prefill_ns_);
    decode_ns_ = std::move(other.decode_ns_);
    prefill_control_ip_ = std::move(other.prefill_control_ip_);
    decode_control_ip_ = std::move(other.decode_control_ip_);
    decode_link_ip_ = std::move(other.decode_link_ip_);
    options_ = other.options_;
    delay_applied_ = other.delay_applied_;
    why_no_delay_ = std::move(other.why_no_delay_);
    other.prefill_ns_.clear();
    other.decode_ns_.clear();
  }
  return *this;
}

NetnsLink::~NetnsLink() { Destroy(); }

void NetnsLink::Destroy() {
  // Deleting a namespace deletes its veths, and with them their peers on the host.
  for (std::string* ns : {&prefill_ns_, &decode_ns_}) {
    if (!ns->empty()) Run("ip netns del " + *ns);
    ns->clear();
  }
}

}  // namespace smartgen::tools
