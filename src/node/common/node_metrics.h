// What every node's /metrics carries besides its role's own series: its KV pool and the
// process. `prefix` is the role's ("smartgen_prefill" or "smartgen_decode"):
//
//   <prefix>_kv_blocks_used                   gauge  KV pool blocks in use (no label: read by
//                                                   its bare name in tests and scripts)
//   <prefix>_kv_blocks_capacity{model_name}   gauge  KV pool blocks in all
//   <prefix>_kv_capacity_bytes{model_name}    gauge  KV pool size in bytes
//   <prefix>_kv_usage_ratio{model_name}       gauge  used / capacity, 0..1
//   process_* and smartgen_build_info{role}   (core/process_metrics.h)
//
// Thread-safe (the pool's counters are).
#pragma once

#include <string>
#include <string_view>

#include "kv/block_pool.h"

namespace smartgen::node {

void AppendNodeMetrics(std::string* out, std::string_view prefix, std::string_view role,
                       std::string_view model_name, const kv::BlockPool& pool);

}  // namespace smartgen::node
