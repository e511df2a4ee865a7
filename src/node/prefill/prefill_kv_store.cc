#include "node/prefill/prefill_kv_store.h"

namespace smartgen::node {

Result<std::shared_ptr<PrefillKvStore::Entry>> PrefillKvStore::Add(std::uint64_t request_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.count(request_id)) return InvalidArgument("request {} is already known", request_id);
  auto entry = std::make_shared<Entry>(pool_);
  entries_.emplace(request_id, entry);
  return entry;
}

void PrefillKvStore::MarkLayerDone(std::uint64_t request_id, int layer) {
  if (auto e = Find(request_id)) e->layers_done.store(layer + 1, std::memory_order_release);
}

void PrefillKvStore::Remove(std::uint64_t request_id) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(request_id);
}

std::size_t PrefillKvStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

std::shared_ptr<PrefillKvStore::Entry> PrefillKvStore::Find(std::uint64_t request_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(request_id);
  return it == entries_.end() ? nullptr : it->second;
}

Status PrefillKvStore::Read(const transfer::BlockKey& key, transfer::ConstBlockView* view) {
  std::shared_ptr<Entry> e = Find(key.request_id);
  if (e == nullptr) return NotFound("request {} has no KV here", key.request_id);
  const kv::KvGeometry& g = e->kv.geometry();
  if (static_cast<int>(key.layer) >= g.n_layers || static_cast<int>(key.kv_head) >= g.n_kv_heads) {
    return NotFound("block {}/{}/{} is outside the model", key.layer, key.kv_head, key.block);
  }
  if (static_cast<int>(key.layer) >= e->layers_done.load(std::memory_order_acquire)) {
    return Unavailable("layer {} of request {} is not computed yet", key.layer, key.request_id);
  }
  if (static_cast<std::int64_t>(key.block) >= g.BlocksFor(e->kv.n_tokens())) {
    return NotFound("request {} has no block {}", key.request_id, key.block);
  }
  // The entry stays alive while the engine holds the lease (Release comes after every read),
  // so the views outlive this shared_ptr.
  const std::byte* data = e->kv.BlockData(key.layer, key.kv_head, key.block);
  view->k = {data, g.half_block_bytes()};
  view->v = {data + g.half_block_bytes(), g.half_block_bytes()};
  return Status::Ok();
}

void PrefillKvStore::Release(std::uint64_t request_id, transfer::ReleaseReason) {
  std::shared_ptr<Entry> e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(request_id);
    if (it == entries_.end()) return;
    e = std::move(it->second);
    entries_.erase(it);
  }
  e->released.store(true, std::memory_order_release);
  if (on_release_) on_release_(request_id);
}

}  // namespace smartgen::node
