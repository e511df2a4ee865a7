#include "kv/sequence_kv.h"

namespace smartgen::kv {

SequenceKv::SequenceKv(BlockPool* pool) : pool_(pool) {
  table_.resize(static_cast<std::size_t>(geometry().n_layers) * geometry().n_kv_heads);
}

SequenceKv::~SequenceKv() {
  for (const auto& blocks : table_) pool_->Free(blocks);
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

std::byte* SequenceKv::KRow(int layer, int head, std::int64_t pos) {
  const int bt = geometry().block_tokens;
  return pool_->K(block_id(layer, head, pos / bt)) + (pos % bt) * geometry().row_bytes();
}

std::byte* SequenceKv::VRow(int layer, int head, std::int64_t pos) {
  const int bt = geometry().block_tokens;
  return pool_->V(block_id(layer, head, pos / bt)) + (pos % bt) * geometry().row_bytes();
}

kernels::KvBlockRef SequenceKv::Ref(int layer, int head, std::int64_t block) const {
  const int bt = geometry().block_tokens;
  const BlockId id = block_id(layer, head, block);
  const std::int64_t first = block * bt;
  const std::int64_t valid = std::min<std::int64_t>(bt, n_tokens_ - first);
  return {pool_->K(id), pool_->V(id), static_cast<std::int32_t>(valid < 0 ? 0 : valid), first};
}

void SequenceKv::AllRefs(int layer, int head, std::vector<kernels::KvBlockRef>* out) const {
  const std::int64_t n = geometry().BlocksFor(n_tokens_);
  for (std::int64_t b = 0; b < n; ++b) out->push_back(Ref(layer, head, b));
}

}  // namespace smartgen::kv
