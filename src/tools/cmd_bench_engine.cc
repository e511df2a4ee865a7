// `smartgen bench engine`: prefill tok/s at several prompt lengths and decode tok/s, in the
// manner of llama-bench (pp<N> on a fresh context, tg<M> from a one-token context), with the
// rates behind them: decode as weight bytes streamed per second (and, given the machine's
// measured read bandwidth, as a share of that floor), prefill as GFLOP/s (and as a share of a
// measured GEMM peak, from bench/bench_kernels BM_MatMul). The read bandwidth is given
// (--mem-gbs) or measured in the same run (--measure-bandwidth: kernels::MeasureReadBandwidth on
// the engine's threads, sampled again after each decode rep: each rep's share of the floor is
// against the samples on either side of it). Every rate is the median of --reps repetitions,
// with their spread.
// --batch B1,B2,... adds batched decode (the decode node's continuous batch: one forward step
// over B single-token sequences, one GEMM per weight) at each --batch-kv context length.
// --compare-pass-by-pass alternates each decode rep with one of the pass-by-pass step (a pool job
// per pass instead of Forward's team step, model/forward_team.cc) and reports their ratio per
// pair of reps: the same process, weights and threads, so the machine's swings cancel.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/cpu_clock.h"
#include "core/cpu_features.h"
#include "core/process_stats.h"
#include "kernels/read_bandwidth.h"
#include "tools/commands.h"
#include "tools/engine_setup.h"

namespace smartgen::tools {
namespace {

struct BenchEngineOptions {
  EngineOptions engine;
  std::vector<std::int64_t> prompt_tokens = {512, 2048, 4096};
  int decode_tokens = 128;
  int reps = 3;
  std::string stat = "median";  // or "best": the fastest repetition
  double mem_gbs = 0;           // measured read bandwidth (0: no share reported)
  bool measure_bandwidth = false;  // measure mem_gbs here, on the engine's threads
  std::vector<int> batch;                        // batched decode sizes (empty: none)
  std::vector<std::int64_t> batch_kv = {512, 4096};  // context length of each batched sequence
  int batch_steps = 16;                          // decode steps per batched measurement
  bool batch_only = false;                       // skip the single-sequence pp / tg figures
  // Prefill as the prefill node runs it: one Forward::Run with on_layer_kv and on_layer_q hooks
  // (the last kHookQueryRows queries kept per layer), instead of RunOne without hooks.
  bool prefill_hooks = false;
  // Decode reps alternate with reps of a pass-by-pass Forward (ForwardOptions::team_decode off)
  // on the same weights and threads, and the per-pair ratio is reported.
  bool compare_pass_by_pass = false;
  double gemm_gflops = 0;       // measured GEMM peak at these threads (0: no share reported)
  std::uint64_t seed = 1;
  bool json = false;
};

// Repetitions of one rate: the reported figure (the true median, or the best) and the spread.
struct Rates {
  double value = 0, min = 0, max = 0;
};
Rates Summarize(std::vector<double> v, const std::string& stat) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size();
  const double median = m % 2 == 1 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
  return {stat == "best" ? v.back() : median, v.front(), v.back()};
}
nlohmann::json RatesJson(const Rates& r) { return {{"value", r.value}, {"min", r.min}, {"max", r.max}}; }

// How long MeasureCpuClocks runs on each CPU.
constexpr std::chrono::microseconds kClockSample{20'000};

// {"0": 3.59, "1": 2.21}: each CPU's clock (core/cpu_clock.h).
nlohmann::json ClocksJson(const std::vector<core::CpuClock>& clocks) {
  nlohmann::json j = nlohmann::json::object();
  for (const core::CpuClock& c : clocks) j[std::to_string(c.cpu)] = c.ghz;
  return j;
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

// Queries the --prefill-hooks prefill keeps per layer (SmartgenOptions::query_window's default).
constexpr std::int64_t kHookQueryRows = 32;

// Prefill of `prompt` into `seq`: RunOne, or with --prefill-hooks one hooked Run whose hooks
// cost what the prefill node's do at least (a copy of the last queries, a per-layer count).
Status RunPrefill(const BenchEngineOptions& o, Engine& e, kv::SequenceKv* seq,
                  std::span<const std::int32_t> prompt, std::vector<float>* logits) {
  if (!o.prefill_hooks) return e.forward->RunOne(seq, prompt, logits);
  const std::int64_t q_dim = e.model->config().q_dim();
  std::vector<float> last_q;
  int layers_done = 0;
  model::ForwardChunk chunk;
  chunk.kv = seq;
  chunk.tokens = prompt;
  chunk.logits = logits;
  chunk.on_layer_q = [&](int, const float* q, std::int64_t n) {
    const std::int64_t rows = std::min(kHookQueryRows, n);
    last_q.assign(q + (n - rows) * q_dim, q + n * q_dim);
  };
  chunk.query_rows = kHookQueryRows;
  chunk.on_layer_kv = [&](int, std::int64_t, std::int64_t) { ++layers_done; };
  model::ForwardChunk chunks[1] = {chunk};
  SG_RETURN_IF_ERROR(e.forward->Run(chunks));
  if (layers_done != e.model->config().n_layers) {
    return Internal("the layer hook ran {} times", layers_done);
  }
  return Status::Ok();
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

// Batched decode at each context length of --batch-kv: B sequences of `kv_len` tokens (the KV of
// one real prefill, copied), then --batch-steps forward steps over all B at once, per rep.
Status BenchBatched(const BenchEngineOptions& o, Engine& e, double decode_bytes, double mem_gbs) {
  const model::ModelConfig& c = e.model->config();
  const kv::KvGeometry& g = e.blocks->geometry();
  for (const std::int64_t kv_len : o.batch_kv) {
    kv::SequenceKv source(e.blocks.get());
    SG_RETURN_IF_ERROR(e.forward->RunOne(&source, RandomTokens(kv_len, c.n_vocab, o.seed + kv_len), nullptr));
    for (const int b : o.batch) {
      std::vector<std::unique_ptr<kv::SequenceKv>> seqs;
      for (int i = 0; i < b; ++i) {
        seqs.push_back(std::make_unique<kv::SequenceKv>(e.blocks.get()));
        SG_RETURN_IF_ERROR(seqs.back()->Reserve(kv_len + static_cast<std::int64_t>(o.reps + 1) * o.batch_steps));
        for (int l = 0; l < g.n_layers; ++l) {
          for (int h = 0; h < g.n_kv_heads; ++h) {
            for (std::int64_t blk = 0; blk < g.BlocksFor(kv_len); ++blk) {
              std::memcpy(seqs.back()->BlockData(l, h, blk), source.BlockData(l, h, blk), g.block_bytes());
            }
          }
        }
        seqs.back()->set_n_tokens(kv_len);
      }
      const std::vector<std::int32_t> ids = RandomTokens(b, c.n_vocab, o.seed + b);
      std::vector<std::vector<float>> logits(static_cast<std::size_t>(b));
      std::vector<model::ForwardChunk> chunks(static_cast<std::size_t>(b));
      for (int i = 0; i < b; ++i) {
        chunks[i].kv = seqs[i].get();
        chunks[i].tokens = std::span<const std::int32_t>(&ids[i], 1);
        chunks[i].logits = &logits[i];
      }
      SG_RETURN_IF_ERROR(e.forward->Run(chunks));  // warm-up step
      std::vector<double> rates;
      for (int r = 0; r < o.reps; ++r) {
        core::Stopwatch watch;
        for (int s = 0; s < o.batch_steps; ++s) SG_RETURN_IF_ERROR(e.forward->Run(chunks));
        rates.push_back(static_cast<double>(b) * o.batch_steps / watch.ElapsedSeconds());
      }
      const Rates tok_s = Summarize(rates, o.stat);
      // Weights are read once per step, whatever B: steps/s x weight bytes.
      const double gbs = tok_s.value / b * decode_bytes / 1e9;
      if (o.json) {
        nlohmann::json j;
        j["model"] = o.engine.model_path;
        j["weight_type"] = e.model->weight_type_name();
        j["batch"] = b;
        j["kv_len"] = kv_len;
        j["steps"] = o.batch_steps;
        j["decode_tok_s"] = RatesJson(tok_s);
        j["weight_gbs"] = gbs;
        if (mem_gbs > 0) j["mem_gbs"] = mem_gbs;
        j["threads"] = o.engine.threads;
        j["reps"] = o.reps;
        j["loadavg_1m"] = LoadAverage();
        j["peak_rss_mb"] = core::PeakRssBytes() / 1e6;
        std::printf("%s\n", j.dump().c_str());
      } else {
        std::printf("batch %-3d kv %-6lld %8.1f tok/s (%.1f-%.1f) %6.1f steps/s   weights %5.1f GB/s"
                    "   peak RSS %.0f MB   load %.2f\n",
                    b, static_cast<long long>(kv_len), tok_s.value, tok_s.min, tok_s.max,
                    tok_s.value / b, gbs, core::PeakRssBytes() / 1e6, LoadAverage());
      }
      std::fflush(stdout);
    }
  }
  return Status::Ok();
}

Status BenchEngine(const BenchEngineOptions& o) {
  if (o.reps < 1 || o.decode_tokens < 1 || o.batch_steps < 1) {
    return InvalidArgument("--reps, --decode-tokens and --batch-steps must be at least 1");
  }
  std::int64_t longest = 1;
  for (const std::int64_t n : o.prompt_tokens) longest = std::max(longest, n);
  std::int64_t per_seq = longest + o.decode_tokens + 8;
  int max_batch = 0;
  for (const int b : o.batch) {
    if (b < 1 || b > 1024) return InvalidArgument("--batch {} is outside 1..1024", b);
    max_batch = std::max(max_batch, b);
  }
  if (max_batch > 0) {
    for (const std::int64_t kv : o.batch_kv) {
      if (kv < 1) return InvalidArgument("--batch-kv {} is not positive", kv);
      per_seq = std::max(per_seq, kv + static_cast<std::int64_t>(o.reps + 1) * o.batch_steps + 8);
    }
  }
  SG_ASSIGN_OR_RETURN(Engine e, LoadEngine(o.engine, per_seq, max_batch + 1));
  const model::ModelConfig& c = e.model->config();
  const double decode_bytes = DecodeWeightBytes(*e.model);
  const double load_before = LoadAverage();
  // --measure-bandwidth samples the rate before the decode reps and after each one: a rep's
  // share of the floor is taken against the mean of the samples on either side of it.
  std::unique_ptr<kernels::ReadBandwidthProbe> probe;
  std::vector<double> bw_samples;
  if (o.measure_bandwidth) {
    probe = std::make_unique<kernels::ReadBandwidthProbe>(e.pool.get());
    probe->Sample(1);  // untimed: the first pass after faulting the buffer in
    bw_samples.push_back(probe->Sample());
  }
  // With the probe, each CPU's clock as a pinned thread sees it, before and after the decode
  // reps (core/cpu_clock.h: on a VM, the host's share of each vCPU); none where threads cannot
  // be pinned.
  std::vector<core::CpuClock> clocks_before, clocks_after;
  const auto measure_clocks = [] {
    Result<std::vector<core::CpuClock>> clocks = core::MeasureCpuClocks(kClockSample);
    return clocks.ok() ? std::move(*clocks) : std::vector<core::CpuClock>{};
  };
  if (o.measure_bandwidth) clocks_before = measure_clocks();
  const double mem_gbs = o.measure_bandwidth ? bw_samples[0] : o.mem_gbs;
  if (!o.json) {
    std::fprintf(stderr,
                 "model: %s\nweights: %s, %.1f MB (%.1f MB read per decoded token); cpu: %s; %s; "
                 "%d reps, %s (spread: min-max); load average %.2f\n",
                 c.ToString().c_str(), e.model->weight_type_name().c_str(),
                 e.model->weight_bytes() / 1e6, decode_bytes / 1e6,
                 core::GetCpuFeatures().ToString().c_str(), o.engine.ToString().c_str(), o.reps,
                 o.stat.c_str(), load_before);
    if (e.model->grouped_bytes() > 0) {
      std::fprintf(stderr, "layout: %.1f MB of Q5_0 / Q8_0 regrouped in place for the VNNI GEMV\n",
                   e.model->grouped_bytes() / 1e6);
    }
    if (o.prefill_hooks) {
      std::fprintf(stderr, "prefill: one hooked Forward::Run (--prefill-hooks)\n");
    }
    if (!clocks_before.empty()) {
      std::fprintf(stderr, "cpu clocks (dependent adds per ns, each CPU pinned in turn): %s\n",
                   core::FormatCpuClocks(clocks_before).c_str());
    }
    if (mem_gbs > 0) {
      std::fprintf(stderr, "read bandwidth: %.1f GB/s (%s); decode floor %.1f tok/s\n", mem_gbs,
                   o.measure_bandwidth ? "measured now, 1 GiB streamed; sampled again after each decode rep"
                                       : "--mem-gbs",
                   mem_gbs * 1e9 / decode_bytes);
    }
  }

  if (o.batch_only) {
    if (max_batch == 0) return InvalidArgument("--batch-only needs --batch");
    return BenchBatched(o, e, decode_bytes, mem_gbs);
  }
  // Decode: tg<decode_tokens> after a 1-token context, like llama-bench's tg test.
  const auto decode_rep = [&](model::Forward& forward) -> Result<double> {
    kv::SequenceKv seq(e.blocks.get());
    std::vector<std::int32_t> token = {RandomTokens(1, c.n_vocab, o.seed)[0]};
    model::ForwardChunk warm;
    warm.kv = &seq;
    warm.tokens = token;
    model::ForwardChunk first[1] = {warm};
    SG_RETURN_IF_ERROR(forward.Run(first));
    std::vector<float> logits;
    core::Stopwatch watch;
    for (int i = 0; i < o.decode_tokens; ++i) {
      model::ForwardChunk step;
      step.kv = &seq;
      step.tokens = token;
      step.logits = &logits;
      model::ForwardChunk steps[1] = {step};
      SG_RETURN_IF_ERROR(forward.Run(steps));
    }
    return o.decode_tokens / watch.ElapsedSeconds();
  };
  std::unique_ptr<model::Forward> passes;  // --compare-pass-by-pass
  if (o.compare_pass_by_pass) {
    model::ForwardOptions fo;
    fo.max_context = e.forward->max_context();
    fo.team_decode = false;
    passes = std::make_unique<model::Forward>(*e.model, e.pool.get(), fo);
  }
  std::vector<double> decode_rates, pass_rates, pair_ratios;
  for (int r = 0; r < o.reps; ++r) {
    // The pass-by-pass rep goes first in every other pair, so neither path always runs second.
    if (passes && r % 2 == 1) {
      SG_ASSIGN_OR_RETURN(const double rate, decode_rep(*passes));
      pass_rates.push_back(rate);
    }
    SG_ASSIGN_OR_RETURN(const double rate, decode_rep(*e.forward));
    decode_rates.push_back(rate);
    if (passes && r % 2 == 0) {
      SG_ASSIGN_OR_RETURN(const double pass_rate, decode_rep(*passes));
      pass_rates.push_back(pass_rate);
    }
    if (passes) pair_ratios.push_back(rate / pass_rates.back());
    if (probe) bw_samples.push_back(probe->Sample());
  }
  if (passes && !o.json) {
    const Rates pass = Summarize(pass_rates, o.stat), ratio = Summarize(pair_ratios, "median");
    std::printf("tg%-4d pass by pass %7.1f tok/s (%.1f-%.1f); team step / pass by pass, per pair of "
                "reps: %.3f (%.3f-%.3f)\n",
                o.decode_tokens, pass.value, pass.min, pass.max, ratio.value, ratio.min, ratio.max);
  }
  const Rates decode = Summarize(decode_rates, o.stat);
  const double decode_gbs = decode.value * decode_bytes / 1e9;
  Rates share{mem_gbs > 0 ? decode_gbs / mem_gbs : 0.0, 0, 0};
  Rates bandwidth{mem_gbs, mem_gbs, mem_gbs};
  if (probe) {
    std::vector<double> shares;
    for (std::size_t r = 0; r < decode_rates.size(); ++r) {
      const double floor_gbs = 0.5 * (bw_samples[r] + bw_samples[r + 1]);
      shares.push_back(decode_rates[r] * decode_bytes / 1e9 / floor_gbs);
    }
    share = Summarize(shares, o.stat);
    bandwidth = Summarize(bw_samples, "median");
    clocks_after = measure_clocks();
  }
  const double bw_share = share.value;

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
      SG_RETURN_IF_ERROR(RunPrefill(o, e, &seq, prompt, &logits));
      rates.push_back(static_cast<double>(n) / watch.ElapsedSeconds());
    }
    const Rates prefill = Summarize(rates, o.stat);
    const double prefill_gflops = prefill.value * PrefillFlops(*e.model, n) / static_cast<double>(n) / 1e9;
    const double gemm_share = o.gemm_gflops > 0 ? prefill_gflops / o.gemm_gflops : 0.0;
    if (o.json) {
      nlohmann::json j;
      j["model"] = o.engine.model_path;
      j["weight_type"] = e.model->weight_type_name();
      j["n_prompt"] = n;
      j["prefill_tok_s"] = prefill.value;
      j["prefill_tok_s_spread"] = RatesJson(prefill);
      j["prefill_gflops"] = prefill_gflops;
      j["decode_tok_s"] = decode.value;
      j["decode_tok_s_spread"] = RatesJson(decode);
      j["decode_weight_mb"] = decode_bytes / 1e6;
      j["decode_gbs"] = decode_gbs;
      if (mem_gbs > 0) {
        j["mem_gbs"] = bandwidth.value;
        j["decode_share_of_bandwidth_floor"] = bw_share;
        if (probe) {
          j["mem_gbs_samples"] = bw_samples;
          j["decode_share_of_bandwidth_floor_spread"] = RatesJson(share);
          j["cpu_ghz_before"] = ClocksJson(clocks_before);
          j["cpu_ghz_after"] = ClocksJson(clocks_after);
        }
      }
      if (o.gemm_gflops > 0) j["prefill_share_of_gemm_peak"] = gemm_share;
      j["n_decode"] = o.decode_tokens;
      j["threads"] = o.engine.threads;
      j["kv_dtype"] = o.engine.kv_dtype;
      j["reps"] = o.reps;
      j["prefill_hooks"] = o.prefill_hooks;
      if (passes) {
        j["pass_by_pass_decode_tok_s"] = RatesJson(Summarize(pass_rates, o.stat));
        j["team_over_pass_by_pass"] = RatesJson(Summarize(pair_ratios, "median"));
      }
      j["stat"] = o.stat;
      j["loadavg_1m"] = {load_before, LoadAverage()};
      j["peak_rss_mb"] = core::PeakRssBytes() / 1e6;
      j["cpu"] = core::GetCpuFeatures().ToString();
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("pp%-6lld %8.1f tok/s (%.1f-%.1f) %6.1f GFLOP/s", static_cast<long long>(n),
                  prefill.value, prefill.min, prefill.max, prefill_gflops);
      if (o.gemm_gflops > 0) std::printf(" (%3.0f%% of GEMM peak)", 100 * gemm_share);
      std::printf("   tg%-4d %7.1f tok/s (%.1f-%.1f) %5.1f GB/s", o.decode_tokens, decode.value,
                  decode.min, decode.max, decode_gbs);
      if (probe) {
        std::printf(" (%3.0f%% of bandwidth floor, per rep %.0f-%.0f%%; read %.1f GB/s, %.1f-%.1f)",
                    100 * bw_share, 100 * share.min, 100 * share.max, bandwidth.value, bandwidth.min,
                    bandwidth.max);
      } else if (mem_gbs > 0) {
        std::printf(" (%3.0f%% of bandwidth floor)", 100 * bw_share);
      }
      if (probe) std::printf("   cpu clocks after %s", core::FormatCpuClocks(clocks_after).c_str());
      std::printf("   threads %d   peak RSS %.0f MB%s   load %.2f\n", o.engine.threads,
                  core::PeakRssBytes() / 1e6, probe ? " (with the 1 GiB bandwidth probe)" : "",
                  LoadAverage());
    }
    std::fflush(stdout);
  }
  if (max_batch > 0) return BenchBatched(o, e, decode_bytes, mem_gbs);
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
  cmd->add_flag("--measure-bandwidth", o->measure_bandwidth,
                "measure the read bandwidth first (1 GiB streamed on --threads threads) for the "
                "decode share of the bandwidth floor");
  cmd->add_option("--batch", o->batch,
                  "batched decode: batch sizes (B sequences decoded in one forward step each)")
      ->delimiter(',');
  cmd->add_option("--batch-kv", o->batch_kv, "context length of each batched sequence")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--batch-steps", o->batch_steps, "decode steps per batched measurement")
      ->capture_default_str();
  cmd->add_flag("--batch-only", o->batch_only, "only the batched decode figures");
  cmd->add_flag("--compare-pass-by-pass", o->compare_pass_by_pass,
                "alternate each decode rep with one of the pass-by-pass forward step (a pool job "
                "per pass, not the team step) and report the ratio per pair of reps");
  cmd->add_flag("--prefill-hooks", o->prefill_hooks,
                "prefill as the prefill node runs it: one hooked Forward::Run (per-layer KV and "
                "query hooks) instead of RunOne");
  cmd->add_option("--seed", o->seed, "prompt seed")->capture_default_str();
  cmd->add_flag("--json", o->json, "one JSON object per line");
  cmd->callback([o] {
    if (int rc = ReportStatus("bench engine", BenchEngine(*o))) throw CLI::RuntimeError(rc);
  });
}

}  // namespace smartgen::tools
