// One point of `bench ttst` over a prompt set (ttst_prompts.h): every prompt through every
// mode, colocated first as the reference, and one record per mode with its accuracy beside its
// latency and bytes, all from the same requests.
//
// Per mode: ttst_ms / ttft_ms / e2e_ms (mean over prompts; ttst_p50_ms), tbt_ms (mean of the
// requests' mean TBT), tbt_p99_ms (99th percentile of every gap of tokens 2..n, pooled),
// bytes_transferred (mean), present_mass_share_step2 (SmartGen: mean share of the selected
// attention mass present at step 2), fallbacks, and
//   retrieval: accuracy (token 2 is the answer), accuracy_delta (this mode's minus
//              colocated's, in points);
//   text:      agreement (teacher-forced top-1 agreement over output indices 1..n-1, i.e. every
//              decode step; index 0 is the prefill's exact token), exact_match_mean (free-running
//              tokens equal to colocated's before the first difference, of n).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "tools/local_cluster.h"
#include "tools/ttst_prompts.h"

namespace smartgen::tools {

struct PromptPointOptions {
  std::vector<std::string> modes;  // colocated is run first whether listed or not
  int output_tokens = 32;
  nlohmann::json options;          // mode options
  std::function<void(const std::string& mode, std::size_t done, std::size_t total)> progress;
};

Result<std::vector<nlohmann::json>> MeasurePromptPoint(const LocalCluster& cluster, PromptTask task,
                                                       const PromptGroup& group,
                                                       const PromptPointOptions& options);

}  // namespace smartgen::tools
