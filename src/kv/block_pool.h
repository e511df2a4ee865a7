// BlockPool: fixed-size physical KV blocks shared by the sequences of one node (paged KV).
//
// Capacity is fixed at construction (memory is bounded; a full pool is kResourceExhausted,
// which a server turns into 429 / back-pressure). Storage is allocated lazily in chunks
// (core::PageBuffer: huge pages where the kernel allows), so a large capacity costs nothing until
// used, and is kept once allocated; Prefault makes the first blocks resident up front, so the
// requests that use them take no page faults. Block ids are stable; a block's bytes never move.
//
// Thread-safety: Allocate/Free are thread-safe; the bytes of a block belong to whoever holds
// its id (no locking on data access).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "core/page_buffer.h"
#include "core/result.h"
#include "kv/kv_geometry.h"

namespace smartgen::kv {

using BlockId = std::int32_t;
inline constexpr BlockId kNoBlock = -1;

class BlockPool {
 public:
  // A pool of `capacity` blocks of geometry.block_bytes() each.
  BlockPool(const KvGeometry& geometry, std::int64_t capacity);
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  const KvGeometry& geometry() const { return geometry_; }
  std::int64_t capacity() const { return capacity_; }
  std::int64_t used() const;

  // Allocates n blocks (all or none), zero-filled. kResourceExhausted when fewer are free.
  Status Allocate(std::int64_t n, std::vector<BlockId>* out);
  void Free(std::span<const BlockId> ids);

  // Allocates the storage of the first min(n, capacity) blocks now, if not yet, and makes it
  // resident (a node calls this at start-up: NodeConfig::kv_prefault_tokens). Returns the
  // blocks whose storage is resident.
  std::int64_t Prefault(std::int64_t n);
  // Blocks whose storage is allocated (resident or not).
  std::int64_t allocated() const;

  // K then V bytes of block `id`.
  std::byte* Data(BlockId id) {
    return chunks_[id / kChunkBlocks].data() + (id % kChunkBlocks) * block_bytes_;
  }
  const std::byte* Data(BlockId id) const {
    return chunks_[id / kChunkBlocks].data() + (id % kChunkBlocks) * block_bytes_;
  }
  std::byte* K(BlockId id) { return Data(id); }
  std::byte* V(BlockId id) { return Data(id) + geometry_.half_block_bytes(); }
  const std::byte* K(BlockId id) const { return Data(id); }
  const std::byte* V(BlockId id) const { return Data(id) + geometry_.half_block_bytes(); }

 private:
  static constexpr std::int64_t kChunkBlocks = 1024;

  KvGeometry geometry_;
  std::size_t block_bytes_;
  std::int64_t capacity_;
  mutable std::mutex mu_;
  // Appends one chunk of storage and its blocks to free_ (under mu_).
  void GrowLocked();

  std::vector<core::PageBuffer> chunks_;  // grown under mu_, never shrunk
  std::vector<BlockId> free_;             // ids available below chunks_.size() * kChunkBlocks
  std::int64_t used_ = 0;
};

}  // namespace smartgen::kv
