// The block vocabulary every layer above kv shares (select, transfer, node): the address of one
// prompt KV block, a run of adjacent blocks, the grid of a prompt's blocks, and a set of them.
//
// A prompt of n tokens has n_blocks = ceil(n / B) blocks per (layer, KV head); block b holds
// positions [b*B, min((b+1)*B, n)). Tokens generated after the prompt (the decode node's local
// tail) are never addressed here: they are never transferred and always attended. Which
// request a block belongs to is the transfer engine's business (transfer::BlockKey adds it).
#pragma once

#include <compare>
#include <cstdint>
#include <span>
#include <vector>

namespace smartgen::kv {

// One block of one (layer, KV head) of a prompt.
struct BlockKey {
  std::int32_t layer = 0;
  std::int32_t kv_head = 0;
  std::int32_t block = 0;

  friend auto operator<=>(const BlockKey&, const BlockKey&) = default;
};

// Blocks [first_block, first_block + n_blocks) of one (layer, KV head).
struct BlockRange {
  std::int32_t layer = 0;
  std::int32_t kv_head = 0;
  std::int32_t first_block = 0;
  std::int32_t n_blocks = 0;

  BlockKey Key(std::int32_t i) const { return {layer, kv_head, first_block + i}; }
  std::int32_t end_block() const { return first_block + n_blocks; }
  friend auto operator<=>(const BlockRange&, const BlockRange&) = default;
};

// The shape of a prompt's blocks: n_layers x n_kv_heads x n_blocks.
struct BlockGrid {
  int n_layers = 0;
  int n_kv_heads = 0;
  std::int32_t n_blocks = 0;  // per (layer, KV head)

  std::int64_t total() const { return std::int64_t{n_layers} * n_kv_heads * n_blocks; }
  std::int64_t per_layer() const { return std::int64_t{n_kv_heads} * n_blocks; }
  // Dense index, layer-major: ((layer * n_kv_heads) + kv_head) * n_blocks + block.
  std::int64_t Index(const BlockKey& k) const {
    return (std::int64_t{k.layer} * n_kv_heads + k.kv_head) * n_blocks + k.block;
  }
  BlockKey KeyOf(std::int64_t index) const {
    const std::int64_t lh = index / n_blocks;
    return {static_cast<std::int32_t>(lh / n_kv_heads), static_cast<std::int32_t>(lh % n_kv_heads),
            static_cast<std::int32_t>(index % n_blocks)};
  }
  bool Contains(const BlockKey& k) const {
    return k.layer >= 0 && k.layer < n_layers && k.kv_head >= 0 && k.kv_head < n_kv_heads &&
           k.block >= 0 && k.block < n_blocks;
  }
  bool Contains(const BlockRange& r) const {
    return r.n_blocks >= 0 && Contains(BlockKey{r.layer, r.kv_head, r.first_block}) &&
           r.end_block() <= n_blocks;
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

// Keys as runs, in the keys' order: a key extends the previous run when it is that run's next
// block of the same (layer, KV head); anything else starts a new run. Push order is kept, so
// sorted keys give the fewest runs and ranked keys keep their rank.
std::vector<BlockRange> ToRuns(std::span<const BlockKey> keys);

}  // namespace smartgen::kv
