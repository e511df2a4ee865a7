#include "kv/block_key.h"

namespace smartgen::kv {

std::vector<BlockRange> ToRuns(std::span<const BlockKey> keys) {
  std::vector<BlockRange> runs;
  for (const BlockKey& k : keys) {
    if (!runs.empty()) {
      BlockRange& r = runs.back();
      if (r.layer == k.layer && r.kv_head == k.kv_head && r.end_block() == k.block) {
        ++r.n_blocks;
        continue;
      }
    }
    runs.push_back({k.layer, k.kv_head, k.block, 1});
  }
  return runs;
}

}  // namespace smartgen::kv
