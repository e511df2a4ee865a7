#include "tools/local_cluster.h"

#include <sys/stat.h>

#include <httplib.h>

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

}  // namespace

Result<LocalCluster> LocalCluster::Start(const LocalClusterOptions& o) {
  ::mkdir("out", 0755);
  ::mkdir(o.log_dir.c_str(), 0755);
  const core::Deadline deadline = core::Deadline::After(core::Seconds(120));
  LocalCluster c;
  auto node_args = [&](const char* role, int threads) {
    std::vector<std::string> a = {"serve", role, "--model", o.model_path, "--port", "0",
                                  "--threads", std::to_string(threads), "--kv-dtype", o.kv_dtype,
                                  "--block-tokens", std::to_string(o.block_tokens),
                                  "--transport", o.transport,
                                  "--link-gbps", fmt::format("{}", o.link_gbps),
                                  "--link-latency-ms", fmt::format("{}", o.link_latency_ms)};
    a.insert(a.end(), o.extra_node_args.begin(), o.extra_node_args.end());
    return a;
  };
  SG_ASSIGN_OR_RETURN(ChildProcess prefill,
                      ChildProcess::SpawnSelf(node_args("prefill", o.prefill_threads),
                                              o.log_dir + "/prefill.log"));
  SG_ASSIGN_OR_RETURN(ChildProcess decode,
                      ChildProcess::SpawnSelf(node_args("decode", o.decode_threads),
                                              o.log_dir + "/decode.log"));
  SG_ASSIGN_OR_RETURN(std::string p_line, prefill.WaitForLine("prefill node ready", deadline));
  SG_ASSIGN_OR_RETURN(std::string d_line, decode.WaitForLine("decode node ready", deadline));
  SG_ASSIGN_OR_RETURN(const int p_port, PortFromReadyLine(p_line));
  SG_ASSIGN_OR_RETURN(const int d_port, PortFromReadyLine(d_line));
  c.processes_.push_back(std::move(prefill));
  c.processes_.push_back(std::move(decode));
  SG_ASSIGN_OR_RETURN(
      ChildProcess router,
      ChildProcess::SpawnSelf({"serve", "router", "--model", o.model_path, "--port", "0",
                               "--prefill", fmt::format("127.0.0.1:{}", p_port), "--decode",
                               fmt::format("127.0.0.1:{}", d_port), "--default-mode",
                               o.default_mode, "--max-concurrent", "256"},
                              o.log_dir + "/router.log"));
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
