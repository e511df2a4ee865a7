#include "kv/block_pool.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace smartgen::kv {

std::string KvGeometry::ToString() const {
  return fmt::format("{} layers x {} kv heads x head_dim {}, blocks of {} tokens, {}", n_layers,
                     n_kv_heads, head_dim, block_tokens, dtype == KvDType::kF16 ? "f16" : "f32");
}

BlockPool::BlockPool(const KvGeometry& geometry, std::int64_t capacity)
    : geometry_(geometry), block_bytes_(geometry.block_bytes()), capacity_(capacity) {
  // Reserve every chunk slot now: chunks_ never reallocates, so Data() may read it while
  // another thread grows the pool.
  chunks_.reserve(static_cast<std::size_t>((capacity + kChunkBlocks - 1) / kChunkBlocks));
}

std::int64_t BlockPool::used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

Status BlockPool::Allocate(std::int64_t n, std::vector<BlockId>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (used_ + n > capacity_) {
    return ResourceExhausted("KV block pool full: {} of {} blocks used, {} more requested", used_,
                             capacity_, n);
  }
  while (static_cast<std::int64_t>(free_.size()) < n) GrowLocked();
  // In ascending order: a sequence's blocks of one (layer, head) then lie at rising addresses,
  // which the attention's walk over them reads as one forward stream. Taken off the stack as
  // they were freed, every other request got them descending (Free pushes a table in order, so
  // the next Allocate popped it backwards): its decode steps at 4096 tokens ran 7-30 % slower
  // on the Zen 5 VM (docs/RESULTS.md, "Validation with a cold first step").
  const auto first = static_cast<std::ptrdiff_t>(out->size());
  for (std::int64_t i = 0; i < n; ++i) {
    out->push_back(free_.back());
    free_.pop_back();
  }
  std::sort(out->begin() + first, out->end());
  for (auto it = out->begin() + first; it != out->end(); ++it) std::memset(Data(*it), 0, block_bytes_);
  used_ += n;
  return Status::Ok();
}

void BlockPool::GrowLocked() {
  const std::int64_t first = static_cast<std::int64_t>(chunks_.size()) * kChunkBlocks;
  const std::int64_t count = std::min(kChunkBlocks, capacity_ - first);
  chunks_.emplace_back(static_cast<std::size_t>(count) * block_bytes_);
  // Lowest ids on top of the stack: a fresh chunk is used front to back.
  for (std::int64_t i = count - 1; i >= 0; --i) free_.push_back(static_cast<BlockId>(first + i));
}

std::int64_t BlockPool::Prefault(std::int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  n = std::clamp<std::int64_t>(n, 0, capacity_);
  while (static_cast<std::int64_t>(chunks_.size()) * kChunkBlocks < n) GrowLocked();
  const auto chunks = static_cast<std::size_t>((n + kChunkBlocks - 1) / kChunkBlocks);
  for (std::size_t c = 0; c < chunks; ++c) chunks_[c].Prefault();
  return std::min<std::int64_t>(capacity_, static_cast<std::int64_t>(chunks) * kChunkBlocks);
}

std::int64_t BlockPool::allocated() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::min<std::int64_t>(capacity_, static_cast<std::int64_t>(chunks_.size()) * kChunkBlocks);
}

void BlockPool::Free(std::span<const BlockId> ids) {
  std::lock_guard<std::mutex> lock(mu_);
  for (BlockId id : ids) {
    if (id == kNoBlock) continue;
    free_.push_back(id);
    --used_;
  }
}

}  // namespace smartgen::kv
