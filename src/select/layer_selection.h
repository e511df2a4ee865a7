// One layer's chosen prompt blocks, per KV head, and set operations on them: what the
// selection policies (proactive, on-demand, speculative) hand each other. Block addresses,
// grids and sets are the shared vocabulary of kv/block_key.h.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/block_key.h"

namespace smartgen::select {

// The prompt blocks chosen in one layer: per KV head, ascending unique block indices.
struct LayerSelection {
  std::vector<std::vector<std::int32_t>> heads;  // [n_kv_heads][k]
  // The Quest upper bound of each selected block's attention logit (q.k / sqrt(head_dim)),
  // parallel to `heads`; empty when the selection was not scored (every block selected).
  std::vector<std::vector<float>> scores;

  std::int64_t total() const {
    std::int64_t n = 0;
    for (const auto& h : heads) n += static_cast<std::int64_t>(h.size());
    return n;
  }
};

// out = blocks of `want` not in `have`, per head (what is left to fetch when `have` was
// requested early). Both inputs ascending; out is ascending. Heads must match in count.
void SelectionDifference(const LayerSelection& want, const LayerSelection& have,
                         LayerSelection* out);
// out = want ∪ also, per head, ascending.
void SelectionUnion(const LayerSelection& want, const LayerSelection& also, LayerSelection* out);

}  // namespace smartgen::select
