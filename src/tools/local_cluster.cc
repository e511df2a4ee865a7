#include "tools/local_cluster.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include <httplib.h>

#include "transfer/socket.h"

namespace smartgen::tools {
namespace {

Result<int> PortFromReadyLine(const std::string& line) {
  const auto at = line.rfind(' ');
  try {
    return std::stoi(line.substr(at + 1));
  } catch (...) {
    return Internal("cannot read a port from '{}'", line);
  }
}

// A random node token in a file only root can read (nodes off loopback refuse the built-in one).
Result<std::string> WriteTokenFile(const std::string& dir) {
  std::FILE* random = std::fopen("/dev/urandom", "rb");
  if (random == nullptr) return ErrnoStatus(errno, "open /dev/urandom");
  unsigned char bytes[16];
  const std::size_t got = std::fread(bytes, 1, sizeof(bytes), random);
  std::fclose(random);
  if (got != sizeof(bytes)) return Internal("short read from /dev/urandom");
  std::string token;
  for (unsigned char b : bytes) token += fmt::format("{:02x}", b);
  const std::string path = dir + "/node.token";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus(errno, "open " + path);
  const std::string line = token + "\n";
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  if (!ok) return ErrnoStatus(errno, "write " + path);
  return path;
}

}  // namespace

Result<LocalCluster> LocalCluster::Start(const LocalClusterOptions& o) {
  ::mkdir("out", 0755);
  ::mkdir(o.log_dir.c_str(), 0755);
  const core::Deadline deadline = core::Deadline::After(core::Seconds(120));
  LocalCluster c;
  // Where each node listens and how the router reaches it: loopback, or each node's address in
  // its namespace (the KV listener on the shaped veth), with a token (not loopback).
  std::string prefill_host = "127.0.0.1", decode_host = "127.0.0.1", kv_address = "127.0.0.1:0";
  double engine_gbps = o.link_gbps, engine_latency_ms = o.link_latency_ms;
  std::vector<std::string> token_args;
  if (o.netns) {
    SG_ASSIGN_OR_RETURN(c.link_, NetnsLink::Create({o.link_gbps, o.netns_delay_ms}));
    prefill_host = c.link_.prefill_control_ip();
    decode_host = c.link_.decode_control_ip();
    kv_address = c.link_.decode_link_ip() + ":0";
    engine_gbps = 0;  // tc shapes the link
    engine_latency_ms = o.link_latency_ms;
    if (o.netns_delay_ms > 0 && !c.link_.delay_applied()) {
      engine_latency_ms += o.netns_delay_ms;
      std::fprintf(stderr,
                   "[cluster] the %g ms delay is the engine's emulated latency instead: %s\n",
                   o.netns_delay_ms, c.link_.why_no_delay().c_str());
    }
    SG_ASSIGN_OR_RETURN(std::string token_file, WriteTokenFile(o.log_dir));
    token_args = {"--token-file", token_file};
  }
  auto node_args = [&](const char* role, int threads, const std::string& cpus, const std::string& host) {
    std::vector<std::string> a = {"serve", role, "--model", o.model_path, "--host", host,
                                  "--port", "0",
                                  "--threads", std::to_string(threads), "--kv-dtype", o.kv_dtype,
                                  "--block-tokens", std::to_string(o.block_tokens),
                                  "--transport", o.transport,
                                  "--link-gbps", fmt::format("{}", engine_gbps),
                                  "--link-latency-ms", fmt::format("{}", engine_latency_ms)};
    if (!cpus.empty()) a.insert(a.end(), {"--cpus", cpus});
    a.insert(a.end(), token_args.begin(), token_args.end());
    a.insert(a.end(), o.extra_node_args.begin(), o.extra_node_args.end());
    return a;
  };
  std::vector<std::string> decode_args = node_args("decode", o.decode_threads, o.decode_cpus, decode_host);
  decode_args.insert(decode_args.end(), {"--transfer", kv_address});
  std::vector<std::string> prefill_args = node_args("prefill", o.prefill_threads, o.prefill_cpus, prefill_host);
  if (o.netns) prefill_args.insert(prefill_args.end(), {"--allow-decode", c.link_.decode_link_ip()});
  SG_ASSIGN_OR_RETURN(ChildProcess prefill,
                      ChildProcess::SpawnSelf(prefill_args, o.log_dir + "/prefill.log",
                                              c.link_.prefill_ns()));
  SG_ASSIGN_OR_RETURN(ChildProcess decode,
                      ChildProcess::SpawnSelf(decode_args, o.log_dir + "/decode.log",
                                              c.link_.decode_ns()));
  SG_ASSIGN_OR_RETURN(std::string p_line, prefill.WaitForLine("prefill node ready", deadline));
  SG_ASSIGN_OR_RETURN(std::string d_line, decode.WaitForLine("decode node ready", deadline));
  SG_ASSIGN_OR_RETURN(const int p_port, PortFromReadyLine(p_line));
  SG_ASSIGN_OR_RETURN(const int d_port, PortFromReadyLine(d_line));
  c.processes_.push_back(std::move(prefill));
  c.processes_.push_back(std::move(decode));
  std::vector<std::string> router_args = {
      "serve", "router", "--model", o.model_path, "--port", "0",
      "--prefill", transfer::FormatHostPort(prefill_host, static_cast<std::uint16_t>(p_port)),
      "--decode", transfer::FormatHostPort(decode_host, static_cast<std::uint16_t>(d_port)),
      "--default-mode", o.default_mode, "--max-concurrent", "256"};
  router_args.insert(router_args.end(), token_args.begin(), token_args.end());
  SG_ASSIGN_OR_RETURN(ChildProcess router,
                      ChildProcess::SpawnSelf(router_args, o.log_dir + "/router.log"));
  SG_ASSIGN_OR_RETURN(std::string r_line, router.WaitForLine("router ready", deadline));
  SG_ASSIGN_OR_RETURN(c.router_port_, PortFromReadyLine(r_line));
  c.processes_.push_back(std::move(router));
  return c;
}

void LocalCluster::Stop() {
  while (!processes_.empty()) {
    processes_.back().Terminate();
    processes_.pop_back();
  }
  link_ = NetnsLink();  // after every process in it has gone
}

Result<nlohmann::json> LocalCluster::Complete(const nlohmann::json& body, int timeout_s) const {
  httplib::Client cli("127.0.0.1", router_port_);
  cli.set_read_timeout(timeout_s, 0);
  cli.set_write_timeout(timeout_s, 0);
  auto r = cli.Post("/v1/completions", body.dump(), "application/json");
  if (!r) return Unavailable("router unreachable: {}", httplib::to_string(r.error()));
  nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
  if (j.is_discarded()) return DataLoss("router sent malformed JSON (HTTP {})", r->status);
  if (r->status != 200) {
    const std::string message = j.contains("error") ? j["error"].value("message", "?") : r->body;
    return Unavailable("router answered HTTP {}: {}", r->status, message);
  }
  return j;
}

}  // namespace smartgen::tools
