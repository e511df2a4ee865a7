// The TTST benchmark behind `smartgen bench ttst` and `smartgen demo`: TTFT / TTST / TBT per
// transfer mode, prompt length and link rate, through a real deployment (router + prefill node
// + decode node as separate processes over an emulated link), all modes in one run. With
// ratios, the link rate is set per prompt length so that moving the full KV takes R x the
// measured prefill time (DESIGN.md section 8).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "tools/local_cluster.h"

namespace smartgen::tools {

struct TtstBenchOptions {
  LocalClusterOptions cluster;
  std::vector<std::string> modes = {"colocated", "full", "layerwise", "smartgen", "auto"};
  std::vector<std::int64_t> prompt_tokens = {2048, 4096};
  std::string prompt_set = "random";  // "random" | "retrieval" | a prompts file (ttst_prompts.h)
  int prompt_count = 200;             // retrieval: prompts per length
  int output_tokens = 32;
  std::vector<double> link_gbps;  // link rates to measure at, or
  std::vector<double> ratios;     // transfer ratios R (not both; neither = unshaped)
  int reps = 1;
  std::uint64_t seed = 1;
  std::string options_json;       // mode options passed to the nodes (SmartGen budgets, ...)
  std::vector<std::string> profiles;  // SmartGen profiles given to the nodes
  bool json_out = false;          // one JSON record per line on stdout instead of a table
  std::string plot = "out/ttst.png";  // "" = no plot
  std::string data_out = "out/ttst.jsonl";
};

// Runs the benchmark; prints a table (or JSON lines) on stdout and progress on stderr.
Status RunTtstBench(TtstBenchOptions options);

}  // namespace smartgen::tools
