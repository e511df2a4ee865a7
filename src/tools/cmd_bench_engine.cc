// `smartgen bench engine`: prefill tok/s at several prompt lengths and decode tok/s, in the
// manner of llama-bench (pp<N> on a fresh context, tg<M> from a one-token context), with the
// rates behind them: decode as weight bytes streamed per second (and, given the machine's
// measured read bandwidth, as a share of that floor), prefill as GFLOP/s (and as a share of a
// measured GEMM peak). Both come from bench/bench_kernels (BM_ReadBandwidth, BM_MatMul).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/cpu_features.h"
#include "core/process_stats.h"
#include "tools/commands.h"
#include "tools/engine_setup.h"

namespace smartgen::tools {
namespace {

struct BenchEngineOptions {
  EngineOptions engine;
  std::vector<std::int64_t> prompt_tokens = {512, 2048, 4096};
  int decode_tokens = 128;
  int reps = 2;
  std::string stat = "median";  // or "best": the fastest repetition
  double mem_gbs = 0;           // measured read bandwidth (0: no share reported)
  double gemm_gflops = 0;       // measured GEMM peak at these threads (0: no share reported)
  std::uint64_t seed = 1;
  bool json = false;
};

double Pick(std::vector<double> v, const std::string& stat) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0.0;
  return stat == "best" ? v.back() : v[v.size() / 2];
}

// The 1-minute load average, to record what else ran during the measurement.
double LoadAverage() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  in >> one;
  return one;
}

// Weight bytes a decode step streams: every layer matrix and the output head.
double DecodeWeightBytes(const model::Model& m) {
  auto bytes = [](const kernels::WeightView& w) {
    return static_cast<double>(w.row_bytes()) * static_cast<double>(w.rows);
  };
  double total = bytes(m.output());
  for (int l = 0; l < m.config().n_layers; ++l) {
    const model::LayerWeights& w = m.layer(l);
    for (const kernels::WeightView* v : {&w.wq, &w.wk, &w.wv, &w.wo, &w.w_gate, &w.w_up, &w.w_down}) {
      total += bytes(*v);
    }
  }
  return total;
}

// FLOPs of a prefill of n tokens: the layer matmuls for every token, causal attention
// (QK and PV, 2 x head_dim multiply-adds per query-key pair and head), one output row.
double PrefillFlops(const model::Model& m, std::int64_t n) {
  const model::ModelConfig& c = m.config();
  double per_token = 0;
  for (int l = 0; l < c.n_layers; ++l) {
    const model::LayerWeights& w = m.layer(l);
    for (const kernels::WeightView* v : {&w.wq, &w.wk, &w.wv, &w.wo, &w.w_gate, &w.w_up, &w.w_down}) {
      per_token += 2.0 * static_cast<double>(v->rows) * static_cast<double>(v->cols);
    }
  }
  const double pairs = static_cast<double>(n) * static_cast<double>(n + 1) / 2;
  const double attention = 4.0 * c.head_dim * c.n_heads * c.n_layers * pairs;
  return per_token * static_cast<double>(n) + attention + 2.0 * c.n_embd * c.n_vocab;
}

// Random ordinary token ids (not specials) for a synthetic prompt.
std::vector<std::int32_t> RandomTokens(std::int64_t n, int n_vocab, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int hi = std::min(n_vocab, 256) - 1;  // the byte tokens exist in every vocab we make
  std::uniform_int_distribution<int> dist(3, std::max(3, hi));
  std::vector<std::int32_t> ids(static_cast<std::size_t>(n));
  for (auto& id : ids) id = dist(rng);
  return ids;
}

Status BenchEngine(const BenchEngineOptions& o) {
  const std::int64_t longest = *std::max_element(o.prompt_tokens.begin(), o.prompt_tokens.end());
  SG_ASSIGN_OR_RETURN(Engine e, LoadEngine(o.engine, longest + o.decode_tokens + 8));
  const model::ModelConfig& c = e.model->config();
  const double decode_bytes = DecodeWeightBytes(*e.model);
  const double load_before = LoadAverage();
  if (!o.json) {
    std::fprintf(stderr,
                 "model: %s\nweights: %s, %.1f MB (%.1f MB read per decoded token); cpu: %s; %s; "
                 "%d reps, %s; load average %.2f\n",
                 c.ToString().c_str(), e.model->weight_type_name().c_str(),
                 e.model->weight_bytes() / 1e6, decode_bytes / 1e6,
                 core::GetCpuFeatures().ToString().c_str(), o.engine.ToString().c_str(), o.reps,
                 o.stat.c_str(), load_before);
  }

  // Decode: tg<decode_tokens> after a 1-token context, like llama-bench's tg test.
  std::vector<double> decode_rates;
  for (int r = 0; r < o.reps; ++r) {
    kv::SequenceKv seq(e.blocks.get());
    std::vector<std::int32_t> token = {RandomTokens(1, c.n_vocab, o.seed)[0]};
    model::ForwardChunk warm;
    warm.kv = &seq;
    warm.tokens = token;
    model::ForwardChunk first[1] = {warm};
    SG_RETURN_IF_ERROR(e.forward->Run(first));
    std::vector<float> logits;
    core::Stopwatch watch;
    for (int i = 0; i < o.decode_tokens; ++i) {
      model::ForwardChunk step;
      step.kv = &seq;
      step.tokens = token;
      step.logits = &logits;
      model::ForwardChunk steps[1] = {step};
      SG_RETURN_IF_ERROR(e.forward->Run(steps));
    }
    decode_rates.push_back(o.decode_tokens / watch.ElapsedSeconds());
  }
  const double decode_tok_s = Pick(decode_rates, o.stat);
  const double decode_gbs = decode_tok_s * decode_bytes / 1e9;

  for (const std::int64_t n : o.prompt_tokens) {
    if (n <= 0 || n > e.forward->max_context()) {
      return OutOfRange("--prompt-tokens {} is outside 1..{}", n, e.forward->max_context());
    }
    const std::vector<std::int32_t> prompt = RandomTokens(n, c.n_vocab, o.seed + n);
    std::vector<double> rates;
    for (int r = 0; r < o.reps; ++r) {
      kv::SequenceKv seq(e.blocks.get());
      std::vector<float> logits;
      core::Stopwatch watch;
      SG_RETURN_IF_ERROR(e.forward->RunOne(&seq, prompt, &logits));
      rates.push_back(static_cast<double>(n) / watch.ElapsedSeconds());
    }
    const double prefill_tok_s = Pick(rates, o.stat);
    const double prefill_gflops = prefill_tok_s * PrefillFlops(*e.model, n) / static_cast<double>(n) / 1e9;
    const double bw_share = o.mem_gbs > 0 ? decode_gbs / o.mem_gbs : 0.0;
    const double gemm_share = o.gemm_gflops > 0 ? prefill_gflops / o.gemm_gflops : 0.0;
    if (o.json) {
      nlohmann::json j;
      j["model"] = o.engine.model_path;
      j["weight_type"] = e.model->weight_type_name();
      j["n_prompt"] = n;
      j["prefill_tok_s"] = prefill_tok_s;
      j["prefill_gflops"] = prefill_gflops;
      j["decode_tok_s"] = decode_tok_s;
      j["decode_weight_mb"] = decode_bytes / 1e6;
      j["decode_gbs"] = decode_gbs;
      if (o.mem_gbs > 0) j["decode_share_of_bandwidth_floor"] = bw_share;
      if (o.gemm_gflops > 0) j["prefill_share_of_gemm_peak"] = gemm_share;
      j["n_decode"] = o.decode_tokens;
      j["threads"] = o.engine.threads;
      j["kv_dtype"] = o.engine.kv_dtype;
      j["reps"] = o.reps;
      j["stat"] = o.stat;
      j["loadavg_1m"] = {load_before, LoadAverage()};
      j["peak_rss_mb"] = core::PeakRssBytes() / 1e6;
      j["cpu"] = core::GetCpuFeatures().ToString();
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("pp%-6lld %8.1f tok/s %6.1f GFLOP/s", static_cast<long long>(n), prefill_tok_s,
                  prefill_gflops);
      if (o.gemm_gflops > 0) std::printf(" (%3.0f%% of GEMM peak)", 100 * gemm_share);
      std::printf("   tg%-4d %7.1f tok/s %5.1f GB/s", o.decode_tokens, decode_tok_s, decode_gbs);
      if (o.mem_gbs > 0) std::printf(" (%3.0f%% of bandwidth floor)", 100 * bw_share);
      std::printf("   threads %d   peak RSS %.0f MB   load %.2f\n", o.engine.threads,
                  core::PeakRssBytes() / 1e6, LoadAverage());
    }
    std::fflush(stdout);
  }
  return Status::Ok();
}

}  // namespace

void RegisterBenchEngine(CLI::App& bench) {
  auto o = std::make_shared<BenchEngineOptions>();
  CLI::App* cmd = bench.add_subcommand("engine", "prefill and decode throughput of the engine");
  o->engine.AddFlags(*cmd);
  cmd->add_option("--prompt-tokens", o->prompt_tokens, "prompt lengths")->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--decode-tokens", o->decode_tokens, "tokens per decode measurement")
      ->capture_default_str();
  cmd->add_option("--reps", o->reps, "repetitions per measurement")->capture_default_str();
  cmd->add_option("--stat", o->stat, "which repetition to report: median or best")
      ->check(CLI::IsMember({"median", "best"}))
      ->capture_default_str();
  cmd->add_option("--mem-gbs", o->mem_gbs,
                  "measured read bandwidth in GB/s (bench_kernels BM_ReadBandwidth) for the "
                  "decode share of the bandwidth floor");
  cmd->add_option("--gemm-gflops", o->gemm_gflops,
                  "measured GEMM peak in GFLOP/s (bench_kernels BM_MatMul) for the prefill share");
  cmd->add_option("--seed", o->seed, "prompt seed")->capture_default_str();
  cmd->add_flag("--json", o->json, "one JSON object per line");
  cmd->callback([o] {
    if (int rc = ReportStatus("bench engine", BenchEngine(*o))) throw CLI::RuntimeError(rc);
  });
}

}  // namespace smartgen::tools
