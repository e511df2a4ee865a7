// `smartgen bench ttst`: see ttst_bench.h.
#include <memory>

#include "tools/commands.h"
#include "tools/ttst_bench.h"

namespace smartgen::tools {

void RegisterBenchTtst(CLI::App& bench) {
  auto o = std::make_shared<TtstBenchOptions>();
  CLI::App* cmd = bench.add_subcommand("ttst", "TTFT/TTST per transfer mode through a local deployment");
  cmd->add_option("--model,-m", o->cluster.model_path, "GGUF model file")->required();
  cmd->add_option("--modes", o->modes,
                  "transfer modes; MODE:nowindow is MODE with the sliding-window-aware transfer off, "
                  "MODE:int8 with int8_wire on (variants combine: smartgen:int8:nowindow)")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--prompt-tokens", o->prompt_tokens, "prompt lengths")->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--prompt-set", o->prompt_set,
                  "random | retrieval (kv-retrieval models) | a prompts file (text: teacher-forced "
                  "agreement and exact match against colocated)")->capture_default_str();
  cmd->add_option("--prompts", o->prompt_count, "retrieval: prompts per length")->capture_default_str();
  cmd->add_option("--output-tokens", o->output_tokens, "tokens generated per request")
      ->capture_default_str();
  cmd->add_option("--link-gbps", o->link_gbps, "link rates in Gbit/s (0 = unshaped)")->delimiter(',');
  cmd->add_option("--ratio", o->ratios, "transfer ratios R (link rate from measured prefill)")
      ->delimiter(',');
  cmd->add_option("--reps", o->reps, "repetitions per point (each runs every mode in turn)")->capture_default_str();
  cmd->add_option("--seed", o->seed, "prompt seed")->capture_default_str();
  cmd->add_option("--threads", o->cluster.prefill_threads, "threads per node")->capture_default_str();
  cmd->add_option("--prefill-cpus", o->cluster.prefill_cpus,
                  "the prefill node's --cpus (CPUs of its own, e.g. 0-3; default: any, unpinned)");
  cmd->add_option("--decode-cpus", o->cluster.decode_cpus,
                  "the decode node's --cpus (CPUs of its own, e.g. 4-7; default: any, unpinned)");
  cmd->add_option("--kv-dtype", o->cluster.kv_dtype, "KV cache type")->capture_default_str();
  cmd->add_option("--transport", o->cluster.transport, "KV transport: tcp, ucx")->capture_default_str();
  cmd->add_option("--options", o->options_json, "mode options as JSON (e.g. SmartGen budgets)");
  cmd->add_option("--profile", o->profiles, "SmartGen profile(s) for the nodes")->delimiter(',');
  cmd->add_option("--plot", o->plot, "PNG plot of TTST against R / link rate ('' = none)")
      ->capture_default_str();
  cmd->add_option("--data", o->data_out, "where to write the records (JSONL)")->capture_default_str();
  cmd->add_flag("--json", o->json_out, "one JSON object per record on stdout");
  cmd->add_flag("--netns", o->cluster.netns,
                "prefill and decode node in their own network namespaces, the KV link over a veth "
                "shaped by tc to the chosen rate instead of the engine's token bucket (root, iproute2)");
  cmd->add_option("--netns-delay-ms", o->cluster.netns_delay_ms,
                  "with --netns: tc netem delay each way on the veth")->capture_default_str();
  cmd->callback([o] {
    o->cluster.decode_threads = o->cluster.prefill_threads;
    for (const auto& p : o->profiles) {
      o->cluster.extra_node_args.push_back("--profile");
      o->cluster.extra_node_args.push_back(p);
    }
    o->cluster.log_dir = "out/logs";
    if (int rc = ReportStatus("bench ttst", RunTtstBench(*o))) throw CLI::RuntimeError(rc);
  });
}

}  // namespace smartgen::tools
