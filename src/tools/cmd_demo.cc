// `smartgen demo`: the README's first command. Starts a router, one prefill node and one decode
// node on the given model over an emulated slow link (chosen so that moving the full KV takes
// about 4x the prefill, the paper's regime), sends one request per transfer mode, and prints
// TTFT and TTST per mode.
#include <memory>

#include "tools/commands.h"
#include "tools/ttst_bench.h"

namespace smartgen::tools {

void RegisterDemo(CLI::App& app) {
  auto o = std::make_shared<TtstBenchOptions>();
  o->prompt_tokens = {1024};
  o->ratios = {4.0};
  o->output_tokens = 16;
  o->modes = {"colocated", "full", "layerwise", "smartgen", "auto"};
  o->plot = "";
  o->data_out = "out/demo.jsonl";
  CLI::App* cmd = app.add_subcommand("demo", "end-to-end demo: prefill node -> decode node over a slow link");
  cmd->add_option("--model,-m", o->cluster.model_path, "GGUF model file")->required();
  cmd->add_option("--prompt-tokens", o->prompt_tokens, "prompt length")->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--ratio", o->ratios, "transfer ratio R")->delimiter(',')->capture_default_str();
  cmd->add_option("--modes", o->modes, "transfer modes")->delimiter(',')->capture_default_str();
  cmd->add_option("--output-tokens", o->output_tokens, "tokens per request")->capture_default_str();
  cmd->callback([o] {
    o->cluster.log_dir = "out/logs";
    if (int rc = ReportStatus("demo", RunTtstBench(*o))) throw CLI::RuntimeError(rc);
  });
}

}  // namespace smartgen::tools
