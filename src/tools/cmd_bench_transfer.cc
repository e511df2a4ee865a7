// `smartgen bench transfer`: throughput and latency of KV block transfers between two processes
// (this one, the decode side, and a forked prefill side) over tcp or ucx, or inside one process
// over loopback. Throughput: one pull of --bytes in --block-bytes blocks. Latency: sequential
// on-demand pulls of --batch-bytes on the idle link, p50/p99. With --link-gbps the sender is
// shaped by the engine's token bucket; --iperf3 also measures iperf3 on the same loopback,
// interleaved with --reps passes (medians compared).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "tools/commands.h"
#include "transfer/endpoint.h"
#include "transfer/memory_block_store.h"
#include "transfer/rate_limiter.h"
#include "transfer/transport_factory.h"

namespace smartgen::tools {
namespace {

using transfer::BlockRange;
using transfer::Deadline;

struct BenchTransferOptions {
  std::string transport = "tcp";
  std::string ucx_tls;
  double link_gbps = 0;
  double latency_ms = 0;
  std::uint64_t bytes = 256ull << 20;
  std::uint64_t block_bytes = 4096;
  std::uint64_t batch_bytes = 64 * 1024;
  int latency_samples = 200;
  std::uint64_t max_frame_bytes = 1 << 20;
  bool warmup = true;
  int reps = 1;
  bool iperf3 = false;
  bool json = false;
};

constexpr std::uint64_t kBulkRequest = 1;
constexpr std::uint64_t kLatencyRequest = 2;
constexpr std::int32_t kLayers = 32;
constexpr std::int32_t kHeads = 8;

// Blocks of `bytes` as rows of (layer, head): kLayers x kHeads rows of `per_row` blocks.
struct Layout {
  transfer::KvGeometry geometry;
  std::int32_t bulk_per_row = 0;
  std::int32_t batch_blocks = 0;
};

Result<Layout> MakeLayout(const BenchTransferOptions& o) {
  if (o.block_bytes < 64 || o.block_bytes % 64 != 0) {
    return InvalidArgument("--block-bytes must be a multiple of 64 (16 tokens x head_dim x f16)");
  }
  Layout l;
  l.geometry.n_layers = kLayers;
  l.geometry.n_kv_heads = kHeads;
  l.geometry.block_tokens = 16;
  l.geometry.dtype = transfer::KvDType::kF16;
  l.geometry.head_dim = static_cast<std::uint32_t>(o.block_bytes / 64);
  const std::uint64_t blocks = std::max<std::uint64_t>(1, o.bytes / o.block_bytes);
  l.bulk_per_row = static_cast<std::int32_t>((blocks + kLayers * kHeads - 1) / (kLayers * kHeads));
  l.batch_blocks =
      static_cast<std::int32_t>(std::max<std::uint64_t>(1, o.batch_bytes / o.block_bytes));
  return l;
}

transfer::EndpointConfig MakeConfig(const BenchTransferOptions& o, const Layout& l,
                                    const char* name) {
  transfer::EndpointConfig c;
  c.name = name;
  c.handshake.model_hash = 0xBE7C;
  c.handshake.geometry = l.geometry;
  c.token = "bench";
  c.link.gbps = o.link_gbps;
  c.link.latency = static_cast<core::Nanos>(o.latency_ms * core::kNanosPerMilli);
  c.max_frame_bytes = o.max_frame_bytes;
  c.default_timeout = core::Seconds(600);
  c.lease_ttl = core::Seconds(600);
  return c;
}

std::vector<BlockRange> BulkRanges(const Layout& l) {
  std::vector<BlockRange> out;
  for (std::int32_t layer = 0; layer < kLayers; ++layer) {
    for (std::int32_t head = 0; head < kHeads; ++head) {
      out.emplace_back(kBulkRequest, kv::BlockRange{layer, head, 0, l.bulk_per_row});
    }
  }
  return out;
}

// The prefill side: serves both requests until the peer leaves. Returns an exit code.
int Serve(const BenchTransferOptions& o, const Layout& l, int report_fd,
          transfer::Endpoint** in_process = nullptr) {
  auto transport = transfer::MakeTransport(o.transport, {o.ucx_tls});
  if (!transport.ok()) return 2;
  transfer::MemoryBlockStore store(l.geometry);
  if (!store.AddRequest(kBulkRequest, l.bulk_per_row, true).ok()) return 3;
  if (!store.AddRequest(kLatencyRequest, l.batch_blocks, true).ok()) return 3;
  auto ep = transfer::Endpoint::Create(MakeConfig(o, l, "bench-prefill"), *transport, &store,
                                       nullptr);
  if (!ep.ok()) return 4;
  auto address = (*ep)->Listen("127.0.0.1:0");
  if (!address.ok()) return 5;
  const std::string line = *address + "\n";
  if (write(report_fd, line.data(), line.size()) < 0) return 6;
  auto peer = (*ep)->Accept(Deadline::After(core::Seconds(30)));
  if (!peer.ok()) return 7;
  while ((*ep)->IsConnected(*peer)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return 0;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t i = static_cast<std::size_t>(std::ceil(p * v.size())) - 1;
  return v[std::min(i, v.size() - 1)];
}

struct Measured {
  double seconds = 0;       // median over the repetitions
  double goodput_gbps = 0;  // median over the repetitions
  std::vector<double> rep_gbps;
  std::vector<double> iperf3_gbps;  // iperf3 runs interleaved with the repetitions
  double p50_ms = 0;
  double p99_ms = 0;
  int samples = 0;
  transfer::Metrics metrics;
};

// iperf3 moving `bytes` over 127.0.0.1 (-n) from one small, cache-resident buffer: the
// reference for unshaped tcp. Gbit/s.
Result<double> RunIperf3(std::uint64_t bytes) {
  const int port = 5200 + static_cast<int>(getpid() % 700);
  const std::string server = fmt::format("iperf3 -s -1 -p {} >/dev/null 2>&1 &", port);
  if (std::system(server.c_str()) != 0) return Unavailable("cannot start iperf3 (install iperf3)");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::string client =
      fmt::format("iperf3 -c 127.0.0.1 -p {} -n {} -J 2>/dev/null", port, bytes);
  FILE* pipe = popen(client.c_str(), "r");
  if (pipe == nullptr) return Unavailable("cannot run iperf3");
  std::string out;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof(buffer), pipe)) out.append(buffer, n);
  if (pclose(pipe) != 0) return Unavailable("iperf3 failed");
  const auto json = nlohmann::json::parse(out, nullptr, false);
  if (json.is_discarded() || !json.contains("end")) return DataLoss("unreadable iperf3 output");
  return json["end"]["sum_received"]["bits_per_second"].get<double>() / 1e9;
}

// The decode side: connects to `address`, pulls the bulk request, then the latency batches.
Result<Measured> Measure(const BenchTransferOptions& o, const Layout& l,
                         std::shared_ptr<transfer::Transport> transport,
                         const std::string& address) {
  transfer::MemoryBlockStore store(l.geometry);
  SG_RETURN_IF_ERROR(store.AddRequest(kBulkRequest, l.bulk_per_row, false));
  SG_RETURN_IF_ERROR(store.AddRequest(kLatencyRequest, l.batch_blocks, false));
  SG_ASSIGN_OR_RETURN(auto ep, transfer::Endpoint::Create(MakeConfig(o, l, "bench-decode"),
                                                          transport, nullptr, &store));
  SG_ASSIGN_OR_RETURN(transfer::PeerId peer, ep->Connect(address, Deadline::After(core::Seconds(30))));
  Measured m;

  // A warm-up pass first: the first touch of fresh memory (ours and the kernel's socket
  // buffers) is slow on some VMs and would be measured instead of the link. Then `reps`
  // measured passes (iperf3 moving the same bytes after each, with --iperf3); medians reported.
  const double bytes = static_cast<double>(kLayers) * kHeads * l.bulk_per_row * o.block_bytes;
  std::vector<double> seconds;
  for (int pass = o.warmup ? -1 : 0; pass < o.reps; ++pass) {
    store.ResetPresence(kBulkRequest);
    core::Stopwatch watch;
    SG_ASSIGN_OR_RETURN(auto bulk, ep->Post(peer, {transfer::Direction::kPull,
                                                   transfer::Priority::kSpeculative,
                                                   BulkRanges(l)}));
    SG_RETURN_IF_ERROR(ep->Wait(bulk, Deadline::After(core::Seconds(600))));
    const double elapsed = watch.ElapsedSeconds();
    ep->Release(bulk);
    if (pass < 0) continue;
    seconds.push_back(elapsed);
    m.rep_gbps.push_back(bytes * 8 / elapsed / 1e9);
    if (o.iperf3) {
      // At least 256 MiB, so that iperf3's own start-up does not count against it.
      SG_ASSIGN_OR_RETURN(double gbps, RunIperf3(std::max<std::uint64_t>(
                                           static_cast<std::uint64_t>(bytes), 256ull << 20)));
      m.iperf3_gbps.push_back(gbps);
    }
  }
  m.seconds = Percentile(seconds, 0.5);
  m.goodput_gbps = bytes * 8 / m.seconds / 1e9;
  SG_RETURN_IF_ERROR(store.VerifyRequest(kBulkRequest).WithContext("bulk bytes"));
  if (store.PresentBlocks(kBulkRequest) != std::uint64_t{kLayers} * kHeads * l.bulk_per_row) {
    return DataLoss("not every bulk block arrived");
  }

  // Latency: one on-demand batch at a time on the idle link; keep the phase near two seconds.
  const double batch_seconds =
      o.link_gbps > 0 ? l.batch_blocks * o.block_bytes * 8 / (o.link_gbps * 1e9) : 0.0005;
  const int samples = std::max(
      10, std::min(o.latency_samples, static_cast<int>(2.0 / (batch_seconds + o.latency_ms / 500))));
  std::vector<double> latencies;
  for (int i = 0; i < samples; ++i) {
    core::Stopwatch one;
    SG_ASSIGN_OR_RETURN(auto h, ep->Post(peer, {transfer::Direction::kPull,
                                                transfer::Priority::kOnDemand,
                                                {{kLatencyRequest, {0, 0, 0, l.batch_blocks}}}}));
    SG_RETURN_IF_ERROR(ep->Wait(h, Deadline::After(core::Seconds(60))));
    latencies.push_back(one.ElapsedMillis());
    ep->Release(h);
  }
  m.samples = samples;
  m.p50_ms = Percentile(latencies, 0.50);
  m.p99_ms = Percentile(latencies, 0.99);
  m.metrics = ep->GetMetrics();
  ep->Disconnect(peer);
  return m;
}

Status BenchTransfer(const BenchTransferOptions& o) {
  SG_ASSIGN_OR_RETURN(Layout l, MakeLayout(o));
  const std::uint64_t bytes = std::uint64_t{kLayers} * kHeads * l.bulk_per_row * o.block_bytes;
  SG_ASSIGN_OR_RETURN(auto probe, transfer::MakeTransport(o.transport, {o.ucx_tls}));
  const bool two_processes = probe->caps().cross_process;
  probe.reset();

  Result<Measured> measured = Unavailable("not run");
  if (two_processes) {
    // Fork before any thread exists here; the child serves, this process measures.
    int fds[2];
    if (pipe(fds) != 0) return ErrnoStatus(errno, "pipe");
    std::fflush(nullptr);
    const pid_t child = fork();
    if (child < 0) return ErrnoStatus(errno, "fork");
    if (child == 0) {
      close(fds[0]);
      _exit(Serve(o, l, fds[1]));
    }
    close(fds[1]);
    std::string address;
    char c;
    while (read(fds[0], &c, 1) == 1 && c != '\n') address.push_back(c);
    close(fds[0]);
    if (address.empty()) {
      waitpid(child, nullptr, 0);
      return Unavailable("the serving process did not start");
    }
    auto transport = transfer::MakeTransport(o.transport, {o.ucx_tls});
    if (!transport.ok()) return transport.status();
    measured = Measure(o, l, *transport, address);
    if (!measured.ok()) kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
  } else {
    // In-process transport: both sides here, the server on its own thread.
    SG_ASSIGN_OR_RETURN(auto transport, transfer::MakeTransport(o.transport, {o.ucx_tls}));
    transfer::MemoryBlockStore store(l.geometry);
    SG_RETURN_IF_ERROR(store.AddRequest(kBulkRequest, l.bulk_per_row, true));
    SG_RETURN_IF_ERROR(store.AddRequest(kLatencyRequest, l.batch_blocks, true));
    SG_ASSIGN_OR_RETURN(auto server, transfer::Endpoint::Create(MakeConfig(o, l, "bench-prefill"),
                                                                transport, &store, nullptr));
    SG_ASSIGN_OR_RETURN(std::string address, server->Listen(""));
    measured = Measure(o, l, transport, address);
  }
  if (!measured.ok()) return measured.status();
  const Measured& m = *measured;

  nlohmann::json row = {
      {"transport", o.transport},
      {"link_gbps", o.link_gbps},
      {"latency_ms", o.latency_ms},
      {"bytes", bytes},
      {"block_bytes", o.block_bytes},
      {"batch_bytes", l.batch_blocks * o.block_bytes},
      {"seconds", m.seconds},
      {"goodput_gbps", m.goodput_gbps},
      {"reps", o.reps},
      {"goodput_gbps_reps", m.rep_gbps},
      {"p50_ms", m.p50_ms},
      {"p99_ms", m.p99_ms},
      {"latency_samples", m.samples},
      {"two_processes", two_processes},
      {"retries", m.metrics.retries},
      {"rejected", m.metrics.rejected_corrupt + m.metrics.rejected_stale + m.metrics.rejected_other},
  };
  if (o.link_gbps > 0) {
    // The shaping promise: >= the rate minus overheads, never above it by more than a bucket.
    const transfer::RateLimiter bucket(o.link_gbps * 1e9);
    row["of_link"] = m.goodput_gbps / o.link_gbps;
    row["bucket_bytes"] = bucket.burst_bytes();
    row["excess_bytes"] = static_cast<double>(bytes) - o.link_gbps * 1e9 / 8 * m.seconds;
  }
  if (o.json) {
    std::printf("%s\n", row.dump().c_str());
  } else {
    std::printf("%-8s link %6.3g Gbit/s  %8.1f MB in %7.3f s  goodput %7.3f Gbit/s  "
                "batch %6.1f KiB p50 %8.3f ms p99 %8.3f ms\n",
                o.transport.c_str(), o.link_gbps, bytes / 1e6, m.seconds, m.goodput_gbps,
                l.batch_blocks * o.block_bytes / 1024.0, m.p50_ms, m.p99_ms);
  }
  if (o.iperf3) {
    const double gbps = Percentile(m.iperf3_gbps, 0.5);
    if (o.json) {
      nlohmann::json ref = {{"transport", "iperf3"},     {"link_gbps", 0},
                            {"bytes", bytes},             {"reps", o.reps},
                            {"goodput_gbps", gbps},       {"goodput_gbps_reps", m.iperf3_gbps},
                            {"vs_iperf3", m.goodput_gbps / gbps}};
      std::printf("%s\n", ref.dump().c_str());
    } else {
      std::printf("iperf3   loopback %.3f Gbit/s (median of %d); %s reached %.1f%% of it\n", gbps,
                  o.reps, o.transport.c_str(), 100 * m.goodput_gbps / gbps);
    }
  }
  std::fflush(stdout);
  return Status::Ok();
}

}  // namespace

void RegisterBenchTransfer(CLI::App& bench) {
  auto o = std::make_shared<BenchTransferOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "transfer", "KV block transfer throughput and latency between two processes");
  cmd->add_option("--transport", o->transport, "tcp|ucx|loopback")
      ->check(CLI::IsMember({"tcp", "ucx", "loopback"}))
      ->capture_default_str();
  cmd->add_option("--ucx-tls", o->ucx_tls, "UCX transports (UCX_TLS syntax), e.g. tcp or sm,self");
  cmd->add_option("--link-gbps", o->link_gbps, "emulated link rate; 0 = unshaped")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--latency-ms", o->latency_ms, "added one-way latency")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--bytes", o->bytes, "bytes of KV to move (K/M/G suffixes)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  cmd->add_option("--block-bytes", o->block_bytes, "bytes per block (K then V)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  cmd->add_option("--batch-bytes", o->batch_bytes, "bytes per latency batch (on-demand pull)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  cmd->add_option("--latency-samples", o->latency_samples, "most latency batches")
      ->capture_default_str();
  cmd->add_option("--max-frame-bytes", o->max_frame_bytes, "largest data frame")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  cmd->add_flag("--warmup,!--no-warmup", o->warmup,
                 "move the bytes once before measuring (default on)");
  cmd->add_option("--reps", o->reps, "measured passes (the median is reported)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--iperf3", o->iperf3,
                "after each pass, iperf3 moves the same bytes on 127.0.0.1 (tcp reference)");
  cmd->add_flag("--json", o->json, "one JSON object per line");
  cmd->callback([o] {
    if (int rc = ReportStatus("bench transfer", BenchTransfer(*o))) throw CLI::RuntimeError(rc);
  });
}

}  // namespace smartgen::tools
