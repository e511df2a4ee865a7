// `smartgen serve prefill|decode|router|local`: the processes of a deployment.
//   prefill - computes prompts and pushes their KV to decode nodes
//   decode  - receives KV, decodes with continuous batching
//   router  - the OpenAI-compatible HTTP front over pools of prefill and decode nodes
//   local   - the HTTP front over the engine in this one process (no disaggregation)
// Each runs until SIGINT or SIGTERM, and prints its whole configuration at start-up.
#include <csignal>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "core/log.h"
#include "node/decode/decode_node.h"
#include "node/prefill/prefill_node.h"
#include "node/router/router.h"
#include "server/http_server.h"
#include "server/model_backend.h"
#include "tools/commands.h"
#include "tools/engine_setup.h"
#include "server/router_backend.h"
#include "tokenizer/chat_template.h"

namespace smartgen::tools {
namespace {

// Blocks until SIGINT or SIGTERM.
void WaitForSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  int sig = 0;
  sigwait(&set, &sig);
  SG_LOG_INFO("serve", "signal {}: shutting down", sig);
}

// Signals go to sigwait, not to a default handler, in every thread started after this.
void BlockSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

// The first line of a token file, without surrounding white space; CLI error when unreadable.
std::string ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) throw CLI::ValidationError("--token-file", "cannot read " + path);
  const auto first = line.find_first_not_of(" \t\r");
  const auto last = line.find_last_not_of(" \t\r");
  if (first == std::string::npos) throw CLI::ValidationError("--token-file", path + " is empty");
  return line.substr(first, last - first + 1);
}

// --control-tls-{cert,key,ca}: TLS on the control plane (/internal/*), on nodes and router alike.
void AddControlTlsFlags(CLI::App& cmd, node::ControlTls& t, const char* whose) {
  cmd.add_option("--control-tls-cert", t.cert_file,
                 std::string("PEM certificate of ") + whose + " for the control plane (/internal/* over "
                 "mutual TLS; with --control-tls-key and --control-tls-ca)");
  cmd.add_option("--control-tls-key", t.key_file, "PEM private key of --control-tls-cert");
  cmd.add_option("--control-tls-ca", t.ca_file,
                 "PEM CA that signed every control-plane peer's certificate (verified)");
}

void AddNodeFlags(CLI::App& cmd, node::NodeConfig& c, const char* default_name) {
  c.name = default_name;
  cmd.add_option("--model,-m", c.model_path, "GGUF model file")->required();
  cmd.add_option("--name", c.name, "node name (logs, /internal/info)")->capture_default_str();
  cmd.add_option("--host", c.http_host, "control-plane HTTP host (IPv6: ::1, ::)")->capture_default_str();
  cmd.add_option("--port", c.http_port, "control-plane HTTP port (0 = any)")->capture_default_str();
  cmd.add_option("--transport", c.transport, "KV transport: tcp, ucx")->capture_default_str();
  cmd.add_option("--token", c.token,
                 "shared secret of the control plane and KV link (required off loopback)");
  cmd.add_option_function<std::string>(
      "--token-file", [&c](const std::string& path) { c.token = ReadTokenFile(path); },
      "read the shared secret from a file (first line)");
  AddControlTlsFlags(cmd, c.control_tls, "this node (server side; clients must present one too)");
  cmd.add_option("--link-gbps", c.link_gbps, "emulated link rate for KV sent (0 = unshaped)")
      ->capture_default_str();
  cmd.add_option("--link-latency-ms", c.link_latency_ms, "emulated one-way link latency")
      ->capture_default_str();
  cmd.add_option("--threads,-t", c.threads, "compute threads")->capture_default_str();
  cmd.add_option("--cpus", c.cpus, kCpusHelp);
  cmd.add_flag("--fast-dot,!--exact-dot", c.fast_dot,
               "decode with int8 (VNNI) and BF16 dot products where the CPU has them (default; "
               "--exact-dot: the f32 path)")->capture_default_str();
  cmd.add_flag("--weights-huge-pages,!--weights-mmap", c.weights_huge_pages,
               "read the weights into transparent huge pages (default; --weights-mmap: map the file)")
      ->capture_default_str();
  cmd.add_option("--kv-dtype", c.kv_dtype, "KV cache type: f16 or f32")->capture_default_str();
  cmd.add_option("--block-tokens", c.block_tokens, "tokens per KV block")->capture_default_str();
  cmd.add_option("--kv-capacity-tokens", c.kv_capacity_tokens, "KV pool size in tokens")
      ->capture_default_str();
  cmd.add_option("--kv-prefault-tokens", c.kv_prefault_tokens,
                 "KV pool made resident at start-up, in tokens (0 = on first use)")
      ->capture_default_str();
  cmd.add_option("--ctx", c.max_context, "context length (0 = the model's)")->capture_default_str();
  cmd.add_option("--profile", c.profile_paths, "SmartGen profile(s) from `smartgen profile`")
      ->delimiter(',');
  cmd.add_option("--heartbeat-timeout", c.heartbeat_timeout_s,
                 "seconds of KV-link silence after which a peer is dead")->capture_default_str();
}

std::string Describe(const node::NodeConfig& c) {
  return fmt::format(
      "name={} model={} http={}:{} transfer={} advertise={} transport={} link_gbps={} link_latency_ms={} "
      "threads={} cpus={} weights_huge_pages={} kv_dtype={} block_tokens={} kv_capacity_tokens={} kv_prefault_tokens={} ctx={} max_batch={} "
      "profiles=[{}] allow_decode=[{}] control_tls={}",
      c.name, c.model_path, c.http_host, c.http_port, c.transfer_address,
      c.advertise.empty() ? "(bound)" : c.advertise, c.transport,
      c.link_gbps, c.link_latency_ms, c.threads, c.cpus.empty() ? "any" : c.cpus, c.weights_huge_pages, c.kv_dtype, c.block_tokens,
      c.kv_capacity_tokens, c.kv_prefault_tokens, c.max_context, c.max_batch, fmt::join(c.profile_paths, ","),
      fmt::join(c.allowed_decode, ","), c.control_tls.ToString());
}

template <typename NodeT>
Status ServeNode(const node::NodeConfig& config, const char* role) {
  BlockSignals();
  SG_LOG_INFO("serve", "{} node: {}", role, Describe(config));
  SG_ASSIGN_OR_RETURN(std::unique_ptr<NodeT> n, NodeT::Create(config));
  SG_RETURN_IF_ERROR(n->Start());
  // A line a parent process can wait for.
  std::printf("%s node ready: http port %d\n", role, n->http_port());
  std::fflush(stdout);
  WaitForSignal();
  n->Stop();
  return Status::Ok();
}

struct RouterOptions {
  node::RouterConfig router;
  std::string default_mode = "layerwise";
  server::HttpServerOptions http;
};

void AddHttpFlags(CLI::App& cmd, server::HttpServerOptions& h) {
  h.port = 8000;
  cmd.add_option("--host", h.host, "HTTP host (loopback by default)")->capture_default_str();
  cmd.add_option("--port", h.port, "HTTP port (0 = any)")->capture_default_str();
  cmd.add_option("--api-key", h.api_key, "require Authorization: Bearer <key>");
  cmd.add_option("--max-concurrent", h.max_concurrent, "generations at once; more wait in line")
      ->capture_default_str();
  cmd.add_option("--max-body-bytes", h.max_body_bytes, "largest request body")->capture_default_str();
  cmd.add_option_function<double>(
      "--request-timeout", [&h](double s) { h.request_timeout = core::Seconds(s); },
      "seconds a request may take, arrival to last token (default 600)");
  cmd.add_option("--max-queued", h.max_queued,
                 "requests that may wait for a generation slot; more get 429 with Retry-After")
      ->capture_default_str();
  cmd.add_option_function<double>(
      "--queue-timeout", [&h](double s) { h.queue_timeout = core::Seconds(s); },
      "seconds a request may wait for a slot before 429 (default 30)");
  cmd.add_option_function<double>(
      "--header-timeout", [&h](double s) { h.header_timeout = core::Seconds(s); },
      "seconds a client has to send its request line and headers (default 10)");
  cmd.add_option_function<double>(
      "--body-timeout", [&h](double s) { h.body_timeout = core::Seconds(s); },
      "seconds a client has to send its request body (default 30)");
  cmd.add_option("--max-connections", h.max_connections,
                 "open client connections; past it the longest idle is closed")
      ->capture_default_str();
  cmd.add_option("--tls-cert", h.tls_cert_file, "PEM certificate chain: serve HTTPS (with --tls-key)");
  cmd.add_option("--tls-key", h.tls_key_file, "PEM private key of --tls-cert");
  cmd.add_option("--served-model-name", h.served_model_names,
                 "name(s) the model is served under (/v1/models lists them; a request naming "
                 "another model gets 404); default: the model's name");
  cmd.add_option("--chat-template", h.chat_template,
                 "chat template for every chat request: a name (" +
                     tokenizer::ChatTemplateNames() +
                     ") or template text; default: the model's own");
}

Status ServeHttp(server::CompletionBackend* backend, const server::HttpServerOptions& options) {
  server::HttpServer http(backend, options);
  SG_RETURN_IF_ERROR(http.Start());
  SG_LOG_INFO("serve", "HTTP: {}", options.ToString());
  std::printf("router ready: http port %d\n", http.port());
  std::fflush(stdout);
  WaitForSignal();
  http.Stop();
  return Status::Ok();
}

Status ServeRouter(RouterOptions o) {
  BlockSignals();
  SG_ASSIGN_OR_RETURN(o.router.default_mode, node::ParseTransferMode(o.default_mode));
  SG_LOG_INFO("serve", "router: name={} model={} prefill=[{}] decode=[{}] default_mode={} control_tls={}",
              o.router.name.empty() ? "(random)" : o.router.name, o.router.model_path,
              fmt::join(o.router.prefill_nodes, ","), fmt::join(o.router.decode_nodes, ","),
              o.default_mode, o.router.control_tls.ToString());
  SG_ASSIGN_OR_RETURN(std::unique_ptr<node::Router> router, node::Router::Create(o.router));
  server::RouterBackend backend(std::move(router));
  return ServeHttp(&backend, o.http);
}

struct LocalOptions {
  std::string model_path;
  server::ModelBackendOptions backend;
  std::string kv_dtype = "f16";
  server::HttpServerOptions http;
};

Status ServeLocal(LocalOptions o) {
  BlockSignals();
  o.backend.kv_dtype = o.kv_dtype == "f32" ? kv::KvDType::kF32 : kv::KvDType::kF16;
  SG_ASSIGN_OR_RETURN(std::unique_ptr<server::ModelBackend> backend,
                      server::ModelBackend::Load(o.model_path, o.backend));
  return ServeHttp(backend.get(), o.http);
}

}  // namespace

void RegisterServe(CLI::App& app) {
  CLI::App* serve = app.add_subcommand("serve", "run a node, the router, or a local server");
  serve->require_subcommand(1);

  auto prefill = std::make_shared<node::NodeConfig>();
  CLI::App* p = serve->add_subcommand("prefill", "a prefill node");
  AddNodeFlags(*p, *prefill, "prefill");
  p->add_option("--allow-decode", prefill->allowed_decode,
                "the only decode nodes this node sends KV to: their KV addresses, host[:port] (e.g. "
                "the router's decode pool; default: any). A prefill call naming another gets 403")
      ->delimiter(',');
  p->add_option("--warmup-tokens", prefill->warmup_tokens,
                "tokens of the start-up prefill that seeds the prefill-time estimate (0 = none)")
      ->capture_default_str();
  p->callback([prefill] {
    if (int rc = ReportStatus("serve prefill", ServeNode<node::PrefillNode>(*prefill, "prefill"))) {
      throw CLI::RuntimeError(rc);
    }
  });

  auto decode = std::make_shared<node::NodeConfig>();
  CLI::App* d = serve->add_subcommand("decode", "a decode node");
  AddNodeFlags(*d, *decode, "decode");
  d->add_option("--transfer", decode->transfer_address,
                "KV listen address host:port ([::]:port or [::1]:port for IPv6)")
      ->capture_default_str();
  d->add_option("--advertise", decode->advertise,
                "KV address prefill nodes are told to connect to, host[:port] (default: the bound "
                "address; needed with a wildcard --transfer, NAT or a DNS name)");
  d->add_option("--max-batch", decode->max_batch, "sequences per decode step")->capture_default_str();
  d->add_option("--prefill-start-timeout", decode->prefill_start_timeout_s,
                "seconds a registered request waits for its prefill to begin (then computes it here)")
      ->capture_default_str();
  d->add_option("--kv-progress-timeout", decode->kv_progress_timeout_s,
                "longest prefill-side silence, in seconds, while a request awaits its KV")
      ->capture_default_str();
  d->add_option("--step-timeout", decode->step_timeout_s,
                "longest KV wait of one decode step, in seconds (then the missing KV is computed here)")
      ->capture_default_str();
  d->callback([decode] {
    if (int rc = ReportStatus("serve decode", ServeNode<node::DecodeNode>(*decode, "decode"))) {
      throw CLI::RuntimeError(rc);
    }
  });

  auto router = std::make_shared<RouterOptions>();
  CLI::App* r = serve->add_subcommand("router", "the OpenAI-compatible front over the nodes");
  r->add_option("--model,-m", router->router.model_path, "GGUF model file (tokenizer)")->required();
  r->add_option("--prefill", router->router.prefill_nodes, "prefill node addresses host:port")
      ->delimiter(',');
  r->add_option("--decode", router->router.decode_nodes, "decode node addresses host:port")
      ->delimiter(',')
      ->required();
  r->add_option("--token", router->router.token, "the nodes' shared secret (signs every call to them)");
  r->add_option_function<std::string>(
      "--token-file", [router](const std::string& path) { router->router.token = ReadTokenFile(path); },
      "read the nodes' shared secret from a file (first line)");
  r->add_option("--name", router->router.name,
                "this router's name to the nodes, which bind each request to it (default: random)");
  AddControlTlsFlags(*r, router->router.control_tls, "this router (client side)");
  r->add_option("--default-mode", router->default_mode,
                "transfer mode when a request names none")->capture_default_str();
  r->add_option_function<double>(
       "--stream-idle-timeout",
       [router](double s) { router->router.stream_idle_timeout = core::Seconds(s); },
       "seconds without a line from a decode node after which it is taken for hung (default 5)");
  r->add_option_function<double>(
       "--health-interval",
       [router](double s) { router->router.health.interval = core::Seconds(s); },
       "seconds between health checks of each node (default 0.5)");
  AddHttpFlags(*r, router->http);
  r->callback([router] {
    if (int rc = ReportStatus("serve router", ServeRouter(*router))) throw CLI::RuntimeError(rc);
  });

  auto local = std::make_shared<LocalOptions>();
  CLI::App* l = serve->add_subcommand("local", "the HTTP front over the engine in this process");
  l->add_option("--model,-m", local->model_path, "GGUF model file")->required();
  l->add_option("--threads,-t", local->backend.threads, "compute threads")->capture_default_str();
  l->add_option("--cpus", local->backend.cpus, kCpusHelp);
  l->add_option("--kv-dtype", local->kv_dtype, "KV cache type: f16 or f32")->capture_default_str();
  AddHttpFlags(*l, local->http);
  l->callback([local] {
    if (int rc = ReportStatus("serve local", ServeLocal(*local))) throw CLI::RuntimeError(rc);
  });
}

}  // namespace smartgen::tools
