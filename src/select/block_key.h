// Addresses of prompt KV blocks, sets of them, and one layer's chosen blocks: the common
// vocabulary of the selection policies (proactive, on-demand, speculative).
//
// A prompt of n tokens has n_blocks = ceil(n / B) blocks per (layer, KV head); block b holds
// positions [b*B, min((b+1)*B, n)). Tokens generated after the prompt (the decode node's local
// tail) are never addressed here: they are never transferred and always attended.
#pragma once

#include <cstdint>
#include <vector>

namespace smartgen::select {

// One block of one (layer, KV head).
struct BlockKey {
  std::int32_t layer = 0;
  std::int32_t head = 0;
  std::int32_t block = 0;
  bool operator==(const BlockKey&) const = default;
};

// The shape of a prompt's blocks: n_layers x n_kv_heads x n_blocks.
struct BlockGrid {
  int n_layers = 0;
  int n_kv_heads = 0;
  std::int32_t n_blocks = 0;  // per (layer, KV head)

  std::int64_t total() const { return std::int64_t{n_layers} * n_kv_heads * n_blocks; }
  std::int64_t per_layer() const { return std::int64_t{n_kv_heads} * n_blocks; }
  // Dense index, layer-major: ((layer * n_kv_heads) + head) * n_blocks + block.
  std::int64_t Index(const BlockKey& k) const {
    return (std::int64_t{k.layer} * n_kv_heads + k.head) * n_blocks + k.block;
  }
  BlockKey KeyOf(std::int64_t index) const {
    const std::int64_t lh = index / n_blocks;
    return {static_cast<std::int32_t>(lh / n_kv_heads), static_cast<std::int32_t>(lh % n_kv_heads),
            static_cast<std::int32_t>(index % n_blocks)};
  }
  bool Contains(const BlockKey& k) const {
    return k.layer >= 0 && k.layer < n_layers && k.head >= 0 && k.head < n_kv_heads &&
           k.block >= 0 && k.block < n_blocks;
  }
  bool operator==(const BlockGrid&) const = default;
};

// A set of blocks of one grid, as a byte map. Keys must lie in the grid (unchecked).
// Not thread-safe.
class BlockSet {
 public:
  BlockSet() = default;
  explicit BlockSet(const BlockGrid& grid) : grid_(grid), bits_(grid.total(), 0) {}

  const BlockGrid& grid() const { return grid_; }
  std::int64_t size() const { return size_; }
  bool Contains(const BlockKey& k) const { return bits_[grid_.Index(k)] != 0; }
  // True when `k` was not in the set.
  bool Insert(const BlockKey& k) {
    std::uint8_t& b = bits_[grid_.Index(k)];
    if (b) return false;
    b = 1;
    ++size_;
    return true;
  }
  void Erase(const BlockKey& k) {
    std::uint8_t& b = bits_[grid_.Index(k)];
    size_ -= b;
    b = 0;
  }

 private:
  BlockGrid grid_;
  std::vector<std::uint8_t> bits_;  // [grid.total()]
  std::int64_t size_ = 0;
};

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
