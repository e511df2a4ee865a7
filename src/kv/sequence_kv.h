// SequenceKv: one sequence's KV cache, as a block table over a BlockPool.
//
// Logical block b of (layer, kv_head) holds positions [b*B, (b+1)*B). Blocks are allocated for
// every (layer, head) when positions are reserved, and returned to the pool on destruction.
// Positions [0, n_tokens()) hold valid K/V; a node that receives blocks over the network may
// mark them valid itself (set_n_tokens) once their bytes are written. Blocks a sequence will
// never hold can be given back early (Release).
//
// Thread-safety: not synchronised. The forward pass writes rows of different (layer, head)
// from different threads, which is safe; Reserve() must not race with readers.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/result.h"
#include "kernels/attention.h"
#include "kv/block_pool.h"

namespace smartgen::kv {

class SequenceKv {
 public:
  explicit SequenceKv(BlockPool* pool);
  ~SequenceKv();
  SequenceKv(const SequenceKv&) = delete;
  SequenceKv& operator=(const SequenceKv&) = delete;

  const KvGeometry& geometry() const { return pool_->geometry(); }
  BlockPool& pool() { return *pool_; }

  // Ensures blocks exist for positions [0, n_tokens). kResourceExhausted if the pool is full
  // (nothing is allocated then).
  Status Reserve(std::int64_t n_tokens);
  // Positions with blocks allocated.
  std::int64_t capacity_tokens() const { return n_blocks_ * geometry().block_tokens; }
  std::int64_t n_blocks() const { return n_blocks_; }

  // Returns blocks [first, first + n) of every head of `layer` to the pool (clamped to the
  // blocks reserved): KV this sequence will never hold, e.g. a sliding-window layer's blocks
  // before its window on a decode node. Their ids become kNoBlock; Ref gives them no data
  // pointers and no valid tokens, and nothing may write them (BlockData is not valid there).
  void Release(int layer, std::int64_t first, std::int64_t n);
  bool released(int layer, int head, std::int64_t block) const {
    return block_id(layer, head, block) == kNoBlock;
  }

  // A fork: reserves positions [0, n_tokens) here and copies `from`'s blocks that hold them
  // (same geometry; `from` has them reserved; a block `from` released is released here too),
  // then sets n_tokens() = n_tokens. The two
  // sequences then go on independently. Rows of the last block at or past n_tokens are copied
  // too and are not valid until written. kResourceExhausted as Reserve.
  Status CopyFrom(const SequenceKv& from, std::int64_t n_tokens);

  // Positions [0, n_tokens()) hold valid K/V.
  std::int64_t n_tokens() const { return n_tokens_; }
  void set_n_tokens(std::int64_t n) { n_tokens_ = n; }

  BlockId block_id(int layer, int head, std::int64_t block) const {
    return table_[TableIndex(layer, head)][block];
  }
  // K / V row of `pos` for (layer, head): head_dim elements of the KV dtype.
  std::byte* KRow(int layer, int head, std::int64_t pos);
  std::byte* VRow(int layer, int head, std::int64_t pos);
  // Writes head_dim f32 values of K and of V as the rows of `pos` (converted to the KV dtype).
  void StoreRow(int layer, int head, std::int64_t pos, const float* k, const float* v);
  // The whole block (K then V), geometry().block_bytes() bytes.
  std::byte* BlockData(int layer, int head, std::int64_t block) {
    return pool_->Data(block_id(layer, head, block));
  }
  const std::byte* BlockData(int layer, int head, std::int64_t block) const {
    return pool_->Data(block_id(layer, head, block));
  }

  // Attention view of one block, clipped to the valid positions (n_tokens may be < B).
  kernels::KvBlockRef Ref(int layer, int head, std::int64_t block) const;
  // Views of blocks [0, BlocksFor(n_tokens())) of (layer, head), appended to `out`.
  void AllRefs(int layer, int head, std::vector<kernels::KvBlockRef>* out) const;
  // Asks the CPU to bring the K and V rows of positions [first_pos, n_tokens()) of (layer, head)
  // into cache, block by block as attention reads them, until max_bytes are asked for (released
  // blocks are skipped). Only a hint: nothing is read or written.
  void Prefetch(int layer, int head, std::int64_t first_pos, std::size_t max_bytes) const;

 private:
  std::size_t TableIndex(int layer, int head) const {
    return static_cast<std::size_t>(layer) * geometry().n_kv_heads + head;
  }

  BlockPool* pool_;
  std::vector<std::vector<BlockId>> table_;  // [layer * n_kv_heads + head][block]
  std::int64_t n_blocks_ = 0;                // per (layer, head)
  std::int64_t n_tokens_ = 0;
};

}  // namespace smartgen::kv
