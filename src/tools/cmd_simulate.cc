// `smartgen simulate`: the cluster-scale discrete-event simulator (src/sim, issue 13).
//
//   smartgen simulate --model llama-3.1-8b --hw l20 --link-gbps 15,25,32
//       --mode full,layerwise,smartgen --prompt-tokens 8192,32768,61440 --requests 1,6
//       --output-tokens 64 --out sweep.jsonl
//   smartgen simulate --model qwen3-14b --hw a10 --prefill-nodes 2 --decode-nodes 4
//       --topology shared --workload poisson --rate 0.1,0.2,0.4 --requests 200
//       --slo-ttst-ms 1000 --slo-tbt-ms 100 --out load.jsonl
//   smartgen simulate --validate tests/sim/data/ttst_sweep_2026-11-30.jsonl [--calibration preset]
//
// Every combination of the list-valued flags (mode, link rate, prompt length, requests/rate)
// is one simulation; each prints one JSON line: the point's settings and the run summary
// (sim/report.h). --records writes every request's record (JSONL) for plots
// (scripts/plot_sim.py). A progress line goes to stderr when a run is long.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/hardware.h"
#include "sim/model_shape.h"
#include "sim/report.h"
#include "sim/selection_stats.h"
#include "sim/sim_options.h"
#include "sim/validation.h"
#include "sim/workload.h"
#include "tools/commands.h"

namespace smartgen::tools {
namespace {

struct SimulateCmdOptions {
  std::string model = "llama-3.1-8b";
  std::string gguf;
  std::string hw = "l20";
  std::string prefill_hw, decode_hw;
  std::string cpu_calibration;
  double compute_eff = 0, mem_eff = 0;
  int gpus = 1;
  int prefill_nodes = 1, decode_nodes = 1;
  std::string topology = "pair";
  std::vector<double> link_gbps{25};
  double latency_ms = 0.05;
  double frame_bytes = 0;
  std::vector<std::string> modes{"smartgen"};
  std::string workload = "batch";
  std::vector<int> requests{1};
  std::vector<double> rates{1.0};
  double interval_s = 0;
  std::string trace;
  std::vector<std::int64_t> prompt_tokens{4096};
  std::int64_t prompt_max = 0;
  int output_tokens = 64;
  std::uint64_t seed = 1;
  int max_batch = 64;
  int block_tokens = 16;
  std::string options_json = "{}";
  std::string selection = "random-weights";
  double slo_ttft_ms = 0, slo_ttst_ms = 0, slo_tbt_ms = 0;
  std::string out, records;
  std::vector<std::string> validate;
  std::string calibration = "recorded";
  double burst_bytes = -1;
};

Result<sim::Hardware> LoadHardware(const SimulateCmdOptions& o, const std::string& name) {
  sim::Hardware hw;
  if (name == "cpu" && !o.cpu_calibration.empty()) {
    SG_ASSIGN_OR_RETURN(hw, sim::CalibrateCpu(o.cpu_calibration));
  } else {
    SG_ASSIGN_OR_RETURN(hw, sim::HardwareByName(name));
  }
  if (o.compute_eff > 0) hw.compute_eff = o.compute_eff;
  if (o.mem_eff > 0) hw.mem_eff = o.mem_eff;
  return hw.Scaled(o.gpus);
}

// Prints "simulate: point i/n, requests done/total, t = ..." at most twice a second.
class ProgressLine {
 public:
  ProgressLine(int point, int points) : point_(point), points_(points), start_(Clock::now()) {}
  void operator()(int done, int total, double sim_s) {
    const auto now = Clock::now();
    if (now - start_ < std::chrono::seconds(2) || now - last_ < std::chrono::milliseconds(500)) return;
    last_ = now;
    std::fprintf(stderr, "\rsimulate: point %d/%d, %d/%d requests, simulated %.1f s   ", point_,
                 points_, done, total, sim_s);
    shown_ = true;
  }
  ~ProgressLine() {
    if (shown_) std::fprintf(stderr, "\n");
  }

 private:
  using Clock = std::chrono::steady_clock;
  int point_, points_;
  Clock::time_point start_, last_{};
  bool shown_ = false;
};

// The whole KV of an n-token prompt in blocks (the nodes' kv_bytes), or what the decode needs.
double KvBlockBytes(const sim::ClusterSpec& spec, std::int64_t n, bool window_aware) {
  if (n <= 0) return 0;
  const select::NeededBlocks needed =
      sim::NeededBlocksFor(spec.model, spec.options.block_tokens, n, window_aware);
  return static_cast<double>(needed.Total()) * spec.model.KvBytesPerTokenLayer() /
         spec.model.n_kv_heads * spec.options.block_tokens;
}

Status RunValidate(const SimulateCmdOptions& o) {
  std::vector<sim::MeasuredRecord> records;
  for (const std::string& path : o.validate) {
    SG_ASSIGN_OR_RETURN(auto file_records, sim::ReadMeasuredRecords(path));
    records.insert(records.end(), file_records.begin(), file_records.end());
  }
  sim::ValidationOptions v;
  SG_ASSIGN_OR_RETURN(v.cpu, LoadHardware(o, "cpu"));
  v.replay_selection = o.selection == "replay";
  v.burst_bytes = o.burst_bytes;
  // The model the records ran on: --gguf's metadata, else SmolLM2-135M (bench ttst's default).
  if (!o.gguf.empty()) {
    SG_ASSIGN_OR_RETURN(v.shape, sim::ModelShapeFromGguf(o.gguf));
  }
  SG_ASSIGN_OR_RETURN(v.stats, sim::SelectionStatsByName(v.replay_selection ? "random-weights" : o.selection));
  nlohmann::json opts = nlohmann::json::parse(o.options_json, nullptr, false);
  if (opts.is_discarded()) return InvalidArgument("--options is not JSON");
  SG_ASSIGN_OR_RETURN(v.smartgen, sim::ParseSmartgenSimOptions(opts));
  if (o.calibration == "preset") {
    v.calibration = sim::Calibration::kPreset;
  } else if (o.calibration == "own") {
    v.calibration = sim::Calibration::kOwn;
  } else if (o.calibration == "own-all") {
    v.calibration = sim::Calibration::kOwnAll;
  } else if (o.calibration != "recorded") {
    return InvalidArgument("--calibration must be recorded, own, own-all or preset");
  }
  SG_ASSIGN_OR_RETURN(nlohmann::json report, sim::Validate(records, v));
  if (!o.out.empty()) {
    std::ofstream f(o.out);
    if (!f) return NotFound("cannot write {}", o.out);
    f << report.dump(1) << "\n";
  }
  std::printf("%s\n", report["summary"].dump().c_str());
  return Status::Ok();
}

Status RunSimulate(const SimulateCmdOptions& o) {
  if (!o.validate.empty()) return RunValidate(o);
  sim::ClusterSpec base;
  if (!o.gguf.empty()) {
    SG_ASSIGN_OR_RETURN(base.model, sim::ModelShapeFromGguf(o.gguf));
  } else {
    SG_ASSIGN_OR_RETURN(base.model, sim::ModelShapeByName(o.model));
  }
  SG_ASSIGN_OR_RETURN(base.prefill_hw, LoadHardware(o, o.prefill_hw.empty() ? o.hw : o.prefill_hw));
  SG_ASSIGN_OR_RETURN(base.decode_hw, LoadHardware(o, o.decode_hw.empty() ? o.hw : o.decode_hw));
  SG_ASSIGN_OR_RETURN(base.stats, sim::SelectionStatsByName(o.selection));
  nlohmann::json opts = nlohmann::json::parse(o.options_json, nullptr, false);
  if (opts.is_discarded()) return InvalidArgument("--options is not JSON");
  SG_ASSIGN_OR_RETURN(base.options.smartgen, sim::ParseSmartgenSimOptions(opts));
  SG_ASSIGN_OR_RETURN(base.options.topology, sim::ParseTopology(o.topology));
  base.options.n_prefill = o.prefill_nodes;
  base.options.n_decode = o.decode_nodes;
  base.options.link.latency_s = o.latency_ms / 1e3;
  base.options.link.frame_bytes = o.frame_bytes;
  base.options.max_batch = o.max_batch;
  base.options.block_tokens = o.block_tokens;
  std::vector<sim::ModeLabel> modes;
  for (const std::string& m : o.modes) {
    SG_ASSIGN_OR_RETURN(sim::ModeLabel mode, sim::ParseModeLabel(m));
    mode.window_aware = mode.window_aware && base.options.smartgen.window_aware;
    modes.push_back(mode);
  }
  std::vector<sim::RequestSpec> trace;
  if (o.workload == "trace") {
    SG_ASSIGN_OR_RETURN(trace, sim::ReadTrace(o.trace));
    if (trace.empty()) return InvalidArgument("trace {} has no requests", o.trace);
  } else if (o.workload != "batch" && o.workload != "poisson") {
    return InvalidArgument("--workload must be batch, poisson or trace");
  }
  const sim::Slo slo{o.slo_ttft_ms, o.slo_ttst_ms, o.slo_tbt_ms};
  std::fprintf(stderr, "simulate: %s\n  prefill %s\n  decode %s\n  selection %s (%s)\n",
               base.model.ToString().c_str(), base.prefill_hw.ToString().c_str(),
               base.decode_hw.ToString().c_str(), base.stats.name.c_str(), base.stats.source.c_str());

  std::ofstream out_file, records_file;
  if (!o.out.empty()) {
    out_file.open(o.out);
    if (!out_file) return NotFound("cannot write {}", o.out);
  }
  if (!o.records.empty()) {
    records_file.open(o.records);
    if (!records_file) return NotFound("cannot write {}", o.records);
  }
  const std::vector<std::int64_t> prompts =
      o.workload == "trace" ? std::vector<std::int64_t>{0} : o.prompt_tokens;
  const std::vector<double> loads =
      o.workload == "poisson" ? o.rates
                              : std::vector<double>(o.requests.begin(), o.requests.end());
  const int points = static_cast<int>(modes.size() * o.link_gbps.size() * prompts.size() *
                                      (o.workload == "trace" ? 1 : loads.size()));
  int point = 0;
  for (const sim::ModeLabel& mode : modes) {
    for (double gbps : o.link_gbps) {
      for (std::int64_t prompt : prompts) {
        for (std::size_t li = 0; li < (o.workload == "trace" ? 1 : loads.size()); ++li) {
          ++point;
          sim::ClusterSpec spec = base;
          spec.options.mode = mode.mode;
          spec.options.smartgen.window_aware = mode.window_aware;
          spec.options.link.gbps = gbps;
          sim::WorkloadOptions w;
          w.prompt_min = prompt;
          w.prompt_max = std::max(prompt, o.prompt_max);
          w.output_min = w.output_max = o.output_tokens;
          w.seed = o.seed;
          std::vector<sim::RequestSpec> workload;
          nlohmann::json load;
          if (o.workload == "trace") {
            workload = trace;
            load = {{"workload", "trace"}, {"trace", o.trace}};
          } else if (o.workload == "poisson") {
            const int n = o.requests.empty() ? 100 : o.requests.front();
            workload = sim::Poisson(loads[li], n, w);
            load = {{"workload", "poisson"}, {"rate_per_s", loads[li]}, {"requests", n}};
          } else {
            workload = sim::FixedBatch(static_cast<int>(loads[li]), o.interval_s, w);
            load = {{"workload", "batch"}, {"requests", static_cast<int>(loads[li])},
                    {"interval_s", o.interval_s}};
          }
          ProgressLine progress(point, points);
          SG_ASSIGN_OR_RETURN(sim::SimResult result,
                              sim::RunCluster(spec, workload, [&](int d, int t, double s) { progress(d, t, s); }));
          nlohmann::json j = {
              {"model", base.model.name},
              {"prefill_hw", base.prefill_hw.name},
              {"decode_hw", base.decode_hw.name},
              {"mode", sim::ModeLabelName(mode)},
              {"link_gbps", gbps},
              {"latency_ms", o.latency_ms},
              {"topology", sim::TopologyName(spec.options.topology)},
              {"prefill_nodes", o.prefill_nodes},
              {"decode_nodes", o.decode_nodes},
              {"prompt_tokens", prompt},
              {"prompt_max", w.prompt_max},
              {"output_tokens", o.output_tokens},
              {"selection", base.stats.name},
              {"options", sim::ToJson(spec.options.smartgen)},
              {"full_kv_bytes", KvBlockBytes(base, prompt, false)},
              {"needed_kv_bytes", KvBlockBytes(base, prompt, mode.window_aware)},
              {"prefill_s_estimate", sim::CostModel(base.prefill_hw, base.model).Prefill(prompt)}};
          j.update(load);
          j["result"] = sim::Summarize(result, slo);
          const std::string line = j.dump();
          std::printf("%s\n", line.c_str());
          if (out_file.is_open()) out_file << line << "\n";
          if (records_file.is_open()) {
            for (const auto& r : result.requests) {
              nlohmann::json rec = sim::RequestRecord(*r);
              rec["point"] = point;
              rec["link_gbps"] = gbps;
              records_file << rec.dump() << "\n";
            }
          }
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace

void RegisterSimulate(CLI::App& app) {
  auto o = std::make_shared<SimulateCmdOptions>();
  CLI::App* cmd = app.add_subcommand(
      "simulate", "discrete-event simulation of a PD cluster (TTFT/TTST/TBT, bytes, goodput)");
  cmd->add_option("--model", o->model, "model shape by name (llama-3.1-8b, qwen3-8b, qwen3-14b, "
                  "phi-4-14b, gemma-3-12b, smollm2-135m, ...)")->capture_default_str();
  cmd->add_option("--gguf", o->gguf, "model shape from a GGUF's metadata (instead of --model)");
  cmd->add_option("--hw", o->hw, "hardware preset of every node: l20 a10 a100-80g h100 h200 cpu")
      ->capture_default_str();
  cmd->add_option("--prefill-hw", o->prefill_hw, "hardware of the prefill nodes (default --hw)");
  cmd->add_option("--decode-hw", o->decode_hw, "hardware of the decode nodes (default --hw)");
  cmd->add_option("--cpu-calibration", o->cpu_calibration,
                  "smartgen bench engine --json output that calibrates the cpu preset");
  cmd->add_option("--compute-eff", o->compute_eff, "override the presets' compute efficiency");
  cmd->add_option("--mem-eff", o->mem_eff, "override the presets' memory efficiency");
  cmd->add_option("--gpus", o->gpus, "devices per node (tensor parallel; rates and memory scale)")
      ->capture_default_str();
  cmd->add_option("--prefill-nodes", o->prefill_nodes, "prefill nodes")->capture_default_str();
  cmd->add_option("--decode-nodes", o->decode_nodes, "decode nodes")->capture_default_str();
  cmd->add_option("--topology", o->topology, "pair | uplink | shared")->capture_default_str();
  cmd->add_option("--link-gbps", o->link_gbps, "link rates, Gbit/s (list)")->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--latency-ms", o->latency_ms, "one-way link latency")->capture_default_str();
  cmd->add_option("--frame-bytes", o->frame_bytes, "preemption frame (0 = the engine's rule)");
  cmd->add_option("--mode", o->modes,
                  "transfer modes (list): colocated full layerwise smartgen auto; MODE:nowindow "
                  "ignores sliding windows (window_aware false)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--workload", o->workload, "batch | poisson | trace")->capture_default_str();
  cmd->add_option("--requests", o->requests,
                  "batch: requests at once (list); poisson: requests in the run")->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--rate", o->rates, "poisson arrival rates, requests/s (list)")->delimiter(',');
  cmd->add_option("--interval", o->interval_s, "batch: seconds between arrivals (0 = together)");
  cmd->add_option("--trace", o->trace, "trace file: 'arrival_s prompt_tokens output_tokens' lines");
  cmd->add_option("--prompt-tokens", o->prompt_tokens, "prompt lengths (list)")->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--prompt-max", o->prompt_max, "draw prompt lengths uniformly up to this");
  cmd->add_option("--output-tokens", o->output_tokens, "tokens per request, token 1 included")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "workload seed")->capture_default_str();
  cmd->add_option("--max-batch", o->max_batch, "decode batch limit")->capture_default_str();
  cmd->add_option("--block-tokens", o->block_tokens, "tokens per KV block")->capture_default_str();
  cmd->add_option("--options", o->options_json,
                  "SmartGen options JSON (the request's smartgen.options keys, the nodes' "
                  "defaults; plus proactive_rate: configured|share, wait: landed|bounded)")->capture_default_str();
  cmd->add_option("--selection", o->selection,
                  "selection statistics: random-weights | random-weights-2026-11-30 | trained | "
                  "replay (validation: each record's own, random-weights where it has none)")
      ->capture_default_str();
  cmd->add_option("--slo-ttft-ms", o->slo_ttft_ms, "goodput SLO: TTFT target (0 = none)");
  cmd->add_option("--slo-ttst-ms", o->slo_ttst_ms, "goodput SLO: TTST target (0 = none)");
  cmd->add_option("--slo-tbt-ms", o->slo_tbt_ms, "goodput SLO: mean TBT target (0 = none)");
  cmd->add_option("--out", o->out, "also write the JSON lines (or the validation report) here");
  cmd->add_option("--records", o->records, "write every request's record here (JSONL)");
  cmd->add_option("--validate", o->validate,
                  "replay measured bench ttst records (JSONL files, a list) and compare")
      ->delimiter(',');
  cmd->add_option("--calibration", o->calibration, "validation: recorded | own | own-all | preset")
      ->capture_default_str();
  cmd->add_option("--burst-bytes", o->burst_bytes,
                  "validation: the links' token-bucket burst (-1 = the engine's, 0 = none)")
      ->capture_default_str();
  cmd->callback([o] {
    if (int rc = ReportStatus("simulate", RunSimulate(*o))) throw CLI::RuntimeError(rc);
  });
}

}  // namespace smartgen::tools
