#include "node/decode/decode_kv_store.h"

#include <chrono>
#include <thread>

#include "core/log.h"
#include "node/common/node_config.h"
#include "transfer/int8_wire.h"

namespace smartgen::node {

Result<std::shared_ptr<DecodeKvStore::Entry>> DecodeKvStore::Add(std::uint64_t request_id,
                                                                 std::int64_t n_prompt,
                                                                 std::int64_t capacity_tokens,
                                                                 bool decodes_early,
                                                                 std::span<const std::int64_t> first_needed) {
  auto entry =
      std::make_shared<Entry>(pool_, pool_->geometry(), n_prompt, request_id, decodes_early);
  if (!first_needed.empty()) entry->residency.RestrictToNeeded(first_needed);
  SG_RETURN_IF_ERROR(entry->kv.Reserve(std::max(n_prompt, capacity_tokens)));
  // The blocks no decode step needs (a sliding-window layer's before its window) never come:
  // their KV goes back to the pool now.
  for (int l = 0; l < entry->residency.n_layers(); ++l) {
    entry->kv.Release(l, 0, entry->residency.first_needed(l));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.count(request_id)) return InvalidArgument("request {} is already known", request_id);
  entries_.emplace(request_id, entry);
  return entry;
}

std::shared_ptr<DecodeKvStore::Entry> DecodeKvStore::Find(std::uint64_t request_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(request_id);
  return it == entries_.end() ? nullptr : it->second;
}

void DecodeKvStore::Remove(std::uint64_t request_id) {
  std::shared_ptr<Entry> e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(request_id);
    if (it == entries_.end()) return;
    e = std::move(it->second);
    entries_.erase(it);
  }
  e->residency.Cancel();
}

Status DecodeKvStore::Detach(std::uint64_t request_id, core::Deadline deadline) {
  std::shared_ptr<Entry> e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(request_id);
    if (it == entries_.end()) return Status::Ok();
    e = std::move(it->second);
    entries_.erase(it);
  }
  // A write in progress ends with its frame (read, or failed with the link) within the
  // receiver's deadline: this is a rare recovery path, so a short sleep loop will do.
  while (e->pending_writes.load(std::memory_order_acquire) > 0) {
    if (deadline.Expired()) return DeadlineExceeded("request {}: a KV write is still in progress", request_id);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return Status::Ok();
}

std::size_t DecodeKvStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

bool DecodeKvStore::Bind(std::uint64_t request_id, transfer::PeerId link) {
  std::shared_ptr<Entry> e = Find(request_id);
  if (e == nullptr || link.value == 0) return false;
  std::uint64_t expected = 0;
  return e->link.compare_exchange_strong(expected, link.value, std::memory_order_acq_rel) ||
         expected == link.value;
}

Status DecodeKvStore::Admit(transfer::PeerId peer, const transfer::BlockRange& range) {
  std::shared_ptr<Entry> e = Find(range.request_id);
  if (e == nullptr) return Status::Ok();  // unknown: Prepare discards its blocks
  const std::uint64_t link = e->link.load(std::memory_order_acquire);
  if (link == peer.value) return Status::Ok();
  if (refused_ != nullptr) refused_->Increment();
  if (e->frames_refused.fetch_add(1, std::memory_order_relaxed) == 0) {
    SG_LOG_WARN("decode", "refused KV for request {} from KV link {} ({}): the request takes KV "
                "from {} only; further refusals for it are counted, not logged",
                range.request_id, peer.value, transfer::ToString(range),
                link == 0 ? std::string("the link that proves its ticket") : fmt::format("link {}", link));
  }
  return PermissionDenied("request {} does not take KV from this link", range.request_id);
}

Status DecodeKvStore::Prepare(const transfer::BlockKey& key, transfer::WireFormat wire,
                              transfer::BlockDestination* destination,
                              transfer::SinkAction* action) {
  std::shared_ptr<Entry> e = Find(key.request_id);
  if (e == nullptr) {
    *action = transfer::SinkAction::kDiscard;  // finished or cancelled: drop it
    return Status::Ok();
  }
  const kv::KvGeometry& g = e->kv.geometry();
  if (static_cast<int>(key.layer) >= g.n_layers || static_cast<int>(key.kv_head) >= g.n_kv_heads ||
      static_cast<std::int64_t>(key.block) >= e->residency.n_blocks()) {
    return InvalidArgument("block {}/{}/{} is outside request {}'s prompt", key.layer,
                           key.kv_head, key.block, key.request_id);
  }
  if (!e->residency.needed(key.layer, key.block)) {
    // Before a window: never needed, and its KV was given back (Add). Never written.
    *action = transfer::SinkAction::kDiscard;
    return Status::Ok();
  }
  // The owner keeps the entry (and its KV) alive and counts as a pending write.
  e->pending_writes.fetch_add(1, std::memory_order_acq_rel);
  Entry* raw = e.get();
  auto owner = std::shared_ptr<const void>(
      raw, [e](const void*) { e->pending_writes.fetch_sub(1, std::memory_order_acq_rel); });
  *action = e->staged.Prepare(key.key(), wire, std::move(owner), destination);
  if (*action == transfer::SinkAction::kDiscard) {
    e->blocks_duplicate.fetch_add(1, std::memory_order_relaxed);
    e->bytes_duplicate.fetch_add(WireBytes(wire), std::memory_order_relaxed);
  }
  return Status::Ok();
}

void DecodeKvStore::OnBlockReady(const transfer::BlockKey& key, transfer::WireFormat wire,
                                 const transfer::BlockDestination& destination) {
  // A request removed meanwhile no longer counts what arrives for it.
  if (auto e = Find(key.request_id)) {
    kv::BlockState previous = kv::BlockState::kAbsent;
    if (!e->staged.OnReady(key.key(), wire, destination, &previous)) {
      e->residency.Wake();  // a staged copy: the engine applies it (a waiting step re-checks)
    }
    e->blocks_received.fetch_add(1, std::memory_order_relaxed);
    e->bytes_received.fetch_add(WireBytes(wire), std::memory_order_relaxed);
    if (previous == kv::BlockState::kRequested) {
      e->blocks_requested_received.fetch_add(1, std::memory_order_relaxed);
    }
    e->last_block_at.store(core::NowNanos(), std::memory_order_relaxed);
    if (on_block_ready_) on_block_ready_();
  }
}

std::uint64_t DecodeKvStore::WireBytes(transfer::WireFormat wire) const {
  const kv::KvGeometry& g = pool_->geometry();
  return wire == transfer::WireFormat::kInt8 ? transfer::Int8BlockBytes(ToTransferGeometry(g))
                                             : g.block_bytes();
}

void DecodeKvStore::OnBlockRejected(const transfer::BlockKey& key,
                                    const transfer::BlockDestination& destination, const Status&) {
  if (auto e = Find(key.request_id)) e->staged.OnRejected(key.key(), destination);
}

}  // namespace smartgen::node
