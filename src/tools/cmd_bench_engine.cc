// `smartgen bench engine`: prefill tok/s at several prompt lengths and decode tok/s, in the
// manner of llama-bench (pp<N> on a fresh context, tg from a short context).
#include <algorithm>
#include <cstdio>
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
  int decode_tokens = 64;
  int reps = 2;
  std::uint64_t seed = 1;
  bool json = false;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
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
  if (!o.json) {
    std::fprintf(stderr, "model: %s\nweights: %s, %.1f MB; cpu: %s; %s\n", c.ToString().c_str(),
                 e.model->weight_type_name().c_str(), e.model->weight_bytes() / 1e6,
                 core::GetCpuFeatures().ToString().c_str(), o.engine.ToString().c_str());
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
  const double decode_tok_s = Median(decode_rates);

  for (const std::int64_t n : o.prompt_tokens) {
    if (n <= 0 || n > e.forward->max_context()) {
      return OutOfRange("--prompt-tokens {} is outside 1..{}", n, e.forward->max_context());
    }
    const std::vector<std::int32_t> prompt = RandomTokens(n, c.n_vocab, o.seed + n);
    std::vector<double> rates;
    for (int r = 0; r < o.reps; ++r) {
      kv::SequenceKv seq(e.blocks.get());
      std::vector<float> logits;
      model::ForwardChunk chunk;
      chunk.kv = &seq;
      chunk.tokens = prompt;
      chunk.logits = &logits;
      model::ForwardChunk chunks[1] = {chunk};
      core::Stopwatch watch;
      SG_RETURN_IF_ERROR(e.forward->Run(chunks));
      rates.push_back(static_cast<double>(n) / watch.ElapsedSeconds());
    }
    const double prefill_tok_s = Median(rates);
    if (o.json) {
      nlohmann::json j;
      j["model"] = o.engine.model_path;
      j["weight_type"] = e.model->weight_type_name();
      j["n_prompt"] = n;
      j["prefill_tok_s"] = prefill_tok_s;
      j["decode_tok_s"] = decode_tok_s;
      j["n_decode"] = o.decode_tokens;
      j["threads"] = o.engine.threads;
      j["kv_dtype"] = o.engine.kv_dtype;
      j["reps"] = o.reps;
      j["peak_rss_mb"] = core::PeakRssBytes() / 1e6;
      j["cpu"] = core::GetCpuFeatures().ToString();
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("pp%-6lld %9.1f tok/s    tg%-4d %8.1f tok/s    threads %d    peak RSS %.0f MB\n",
                  static_cast<long long>(n), prefill_tok_s, o.decode_tokens, decode_tok_s,
                  o.engine.threads, core::PeakRssBytes() / 1e6);
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
  cmd->add_option("--reps", o->reps, "repetitions (the median is reported)")->capture_default_str();
  cmd->add_option("--seed", o->seed, "prompt seed")->capture_default_str();
  cmd->add_flag("--json", o->json, "one JSON object per line");
  cmd->callback([o] {
    if (int rc = ReportStatus("bench engine", BenchEngine(*o))) throw CLI::RuntimeError(rc);
  });
}

}  // namespace smartgen::tools
