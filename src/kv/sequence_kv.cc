#include "kv/sequence_kv.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/elementwise.h"
#include "kernels/fp16.h"

namespace smartgen::kv {

SequenceKv::SequenceKv(BlockPool* pool) : pool_(pool) {
  table_.resize(static_cast<std::size_t>(geometry().n_layers) * geometry().n_kv_heads);
}

SequenceKv::~SequenceKv() {
  std::vector<BlockId> held;
  for (const auto& blocks : table_) {
    for (BlockId id : blocks) {
      if (id != kNoBlock) held.push_back(id);
    }
  }
  pool_->Free(held);
}

void SequenceKv::Release(int layer, std::int64_t first, std::int64_t n) {
  first = std::max<std::int64_t>(first, 0);
  const std::int64_t end = std::min(n_blocks_, first + std::max<std::int64_t>(n, 0));
  std::vector<BlockId> freed;
  for (int head = 0; head < geometry().n_kv_heads; ++head) {
    std::vector<BlockId>& blocks = table_[TableIndex(layer, head)];
    for (std::int64_t b = first; b < end; ++b) {
      if (blocks[b] != kNoBlock) freed.push_back(blocks[b]);
      blocks[b] = kNoBlock;
    }
  }
  pool_->Free(freed);
}

Status SequenceKv::Reserve(std::int64_t n_tokens) {
  const std::int64_t want = geometry().BlocksFor(n_tokens);
  if (want <= n_blocks_) return Status::Ok();
  const std::int64_t per_table = want - n_blocks_;
  std::vector<BlockId> ids;
  ids.reserve(static_cast<std::size_t>(per_table) * table_.size());
  SG_RETURN_IF_ERROR(pool_->Allocate(per_table * static_cast<std::int64_t>(table_.size()), &ids));
  std::size_t next = 0;
  for (auto& blocks : table_) {
    for (std::int64_t b = 0; b < per_table; ++b) blocks.push_back(ids[next++]);
  }
  n_blocks_ = want;
  return Status::Ok();
}

Status SequenceKv::CopyFrom(const SequenceKv& from, std::int64_t n_tokens) {
  const KvGeometry& g = geometry();
  const std::int64_t blocks = g.BlocksFor(n_tokens);
  if (blocks > from.n_blocks()) {
    return InvalidArgument("fork of {} tokens from a sequence of {} blocks", n_tokens,
                           from.n_blocks());
  }
  SG_RETURN_IF_ERROR(Reserve(n_tokens));
  for (int layer = 0; layer < g.n_layers; ++layer) {
    // What `from` gave back (a prefix, for a window layer) is given back here too.
    std::int64_t released_prefix = 0;
    while (released_prefix < blocks && from.released(layer, 0, released_prefix)) ++released_prefix;
    Release(layer, 0, released_prefix);
    for (int head = 0; head < g.n_kv_heads; ++head) {
      for (std::int64_t b = released_prefix; b < blocks; ++b) {
        if (from.released(layer, head, b)) continue;
        std::memcpy(BlockData(layer, head, b), from.BlockData(layer, head, b), g.block_bytes());
      }
    }
  }
  n_tokens_ = n_tokens;
  return Status::Ok();
}

std::byte* SequenceKv::KRow(int layer, int head, std::int64_t pos) {
  const int bt = geometry().block_tokens;
  return pool_->K(block_id(layer, head, pos / bt)) + (pos % bt) * geometry().row_bytes();
}

std::byte* SequenceKv::VRow(int layer, int head, std::int64_t pos) {
  const int bt = geometry().block_tokens;
  return pool_->V(block_id(layer, head, pos / bt)) + (pos % bt) * geometry().row_bytes();
}

void SequenceKv::StoreRow(int layer, int head, std::int64_t pos, const float* k, const float* v) {
  const int hd = geometry().head_dim;
  std::byte* kd = KRow(layer, head, pos);
  std::byte* vd = VRow(layer, head, pos);
  if (geometry().dtype == KvDType::kF16) {
    kernels::F32ToF16Row(k, reinterpret_cast<kernels::f16_t*>(kd), hd);
    kernels::F32ToF16Row(v, reinterpret_cast<kernels::f16_t*>(vd), hd);
  } else {
    std::memcpy(kd, k, sizeof(float) * hd);
    std::memcpy(vd, v, sizeof(float) * hd);
  }
}

kernels::KvBlockRef SequenceKv::Ref(int layer, int head, std::int64_t block) const {
  const int bt = geometry().block_tokens;
  const BlockId id = block_id(layer, head, block);
  const std::int64_t first = block * bt;
  if (id == kNoBlock) return {nullptr, nullptr, 0, first};  // released: holds nothing
  const std::int64_t valid = std::min<std::int64_t>(bt, n_tokens_ - first);
  return {pool_->K(id), pool_->V(id), static_cast<std::int32_t>(valid < 0 ? 0 : valid), first};
}

void SequenceKv::Prefetch(int layer, int head, std::int64_t first_pos,
                          std::size_t max_bytes) const {
  const int bt = geometry().block_tokens;
  const std::size_t row_bytes = geometry().row_bytes();
  std::size_t asked = 0;
  for (std::int64_t pos = std::max<std::int64_t>(first_pos, 0);
       pos < n_tokens_ && asked < max_bytes;) {
    const std::int64_t block = pos / bt;
    const std::int64_t end = std::min<std::int64_t>((block + 1) * bt, n_tokens_);
    const BlockId id = block_id(layer, head, block);
    if (id != kNoBlock) {
      const std::size_t offset = static_cast<std::size_t>(pos % bt) * row_bytes;
      const std::size_t bytes = static_cast<std::size_t>(end - pos) * row_bytes;
      for (const std::byte* rows : {pool_->K(id) + offset, pool_->V(id) + offset}) {
        // Every cache line the rows touch (the first may start before them).
        const auto first = reinterpret_cast<std::uintptr_t>(rows) & ~std::uintptr_t{63};
        for (std::uintptr_t line = first; line < reinterpret_cast<std::uintptr_t>(rows) + bytes;
             line += 64) {
          __builtin_prefetch(reinterpret_cast<const void*>(line), 0, 3);
        }
      }
      asked += 2 * bytes;
    }
    pos = end;
  }
}

void SequenceKv::AllRefs(int layer, int head, std::vector<kernels::KvBlockRef>* out) const {
  const std::int64_t n = geometry().BlocksFor(n_tokens_);
  for (std::int64_t b = 0; b < n; ++b) out->push_back(Ref(layer, head, b));
}

}  // namespace smartgen::kv
