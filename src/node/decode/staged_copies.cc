#include "node/decode/staged_copies.h"

#include <algorithm>
#include <cstring>

namespace smartgen::node {

using transfer::SinkAction;
using transfer::WireFormat;

StagedCopies::StagedCopies(kv::SequenceKv* kv, kv::Residency* residency, std::int64_t n_prompt,
                           bool stage_last_block)
    : kv_(kv), residency_(residency), n_prompt_(n_prompt), stage_last_block_(stage_last_block) {}

std::int64_t StagedCopies::Index(const kv::BlockKey& k) const {
  return (std::int64_t{k.layer} * residency_->n_kv_heads() + k.kv_head) * residency_->n_blocks() +
         k.block;
}

bool StagedCopies::PartialLast(const kv::BlockKey& k) const {
  const int bt = kv_->geometry().block_tokens;
  return k.block == residency_->n_blocks() - 1 && n_prompt_ % bt != 0;
}

SinkAction StagedCopies::Prepare(const kv::BlockKey& key, WireFormat wire,
                                 std::shared_ptr<const void> in_place_owner,
                                 transfer::BlockDestination* destination) {
  const kv::KvGeometry& g = kv_->geometry();
  std::lock_guard<std::mutex> lock(mu_);
  const kv::BlockState state = residency_->state(key.layer, key.kv_head, key.block);
  if (state == kv::BlockState::kPresent) return SinkAction::kDiscard;
  const bool int8 = wire == WireFormat::kInt8;
  if (int8 && state == kv::BlockState::kApproximate) return SinkAction::kDiscard;
  const std::int64_t index = Index(key);
  const InPlace writing = in_place_.count(index) ? in_place_[index] : InPlace{};
  bool stage =
      (!int8 && state == kv::BlockState::kApproximate) || (stage_last_block_ && PartialLast(key));
  if (!stage && int8 && writing.exact > 0) return SinkAction::kDiscard;  // the exact copy comes
  if (!stage && !int8 && writing.int8 > 0) stage = true;  // replaces the int8 copy once landed
  if (stage) {
    for (const Copy& c : copies_) {
      if (c.key == key && c.wire == wire) return SinkAction::kDiscard;  // one of a kind at a time
    }
    auto bytes = std::make_shared<std::vector<std::byte>>(g.block_bytes());
    copies_.push_back({key, wire, bytes, false});
    ++staged_total_;
    destination->k = {bytes->data(), g.half_block_bytes()};
    destination->v = {bytes->data() + g.half_block_bytes(), g.half_block_bytes()};
    // A copy the engine lets go of unreported (its link died mid-frame) is forgotten, so a
    // later copy of the same kind is not refused.
    const std::byte* id = bytes->data();
    destination->owner = std::shared_ptr<const void>(
        id, [this, id, keep = std::move(in_place_owner), bytes](const void*) {
          std::lock_guard<std::mutex> guard(mu_);
          std::erase_if(copies_, [&](const Copy& c) { return !c.ready && c.bytes->data() == id; });
        });
    return SinkAction::kWrite;
  }
  InPlace& w = in_place_[index];
  ++(int8 ? w.int8 : w.exact);
  std::byte* data = kv_->BlockData(key.layer, key.kv_head, key.block);
  destination->k = {data, g.half_block_bytes()};
  destination->v = {data + g.half_block_bytes(), g.half_block_bytes()};
  // The count drops when the engine lets go of the destination: after the block was marked
  // (or rejected), or when its frame was abandoned.
  destination->owner = std::shared_ptr<const void>(
      data, [this, index, int8, keep = std::move(in_place_owner)](const void*) {
        std::lock_guard<std::mutex> guard(mu_);
        auto it = in_place_.find(index);
        if (it == in_place_.end()) return;
        --(int8 ? it->second.int8 : it->second.exact);
        if (it->second.int8 == 0 && it->second.exact == 0) in_place_.erase(it);
      });
  return SinkAction::kWrite;
}

bool StagedCopies::OnReady(const kv::BlockKey& key, WireFormat wire,
                           const transfer::BlockDestination& destination,
                           kv::BlockState* previous) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Copy& c : copies_) {
      if (c.bytes->data() == destination.k.data()) {
        c.ready = true;
        ready_total_.fetch_add(1, std::memory_order_acq_rel);
        return false;
      }
    }
  }
  if (wire == WireFormat::kInt8) {
    residency_->MarkApproximate(key.layer, key.kv_head, key.block, previous);
  } else {
    residency_->MarkPresent(key.layer, key.kv_head, key.block, previous);
  }
  return true;
}

void StagedCopies::OnRejected(const kv::BlockKey& key,
                              const transfer::BlockDestination& destination) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto staged = std::find_if(copies_.begin(), copies_.end(), [&](const Copy& c) {
      return c.bytes->data() == destination.k.data();
    });
    if (staged != copies_.end()) {
      copies_.erase(staged);
      return;
    }
  }
  residency_->MarkAbsent(key.layer, key.kv_head, key.block);
}

void StagedCopies::CopyRows(const Copy& c) {
  const kv::KvGeometry& g = kv_->geometry();
  // Only the prompt's rows: the last block may also hold generated tokens' rows.
  const std::int64_t rows = std::min<std::int64_t>(
      g.block_tokens, n_prompt_ - std::int64_t{c.key.block} * g.block_tokens);
  std::byte* dst = kv_->BlockData(c.key.layer, c.key.kv_head, c.key.block);
  std::memcpy(dst, c.bytes->data(), rows * g.row_bytes());
  std::memcpy(dst + g.half_block_bytes(), c.bytes->data() + g.half_block_bytes(),
              rows * g.row_bytes());
}

int StagedCopies::Apply() {
  std::lock_guard<std::mutex> lock(mu_);
  int marked = 0;
  std::erase_if(copies_, [&](const Copy& c) {
    if (!c.ready) return false;
    const kv::BlockState state = residency_->state(c.key.layer, c.key.kv_head, c.key.block);
    const bool int8 = c.wire == WireFormat::kInt8;
    if (state == kv::BlockState::kPresent || (int8 && state == kv::BlockState::kApproximate)) {
      return true;  // a better or equal copy is here already
    }
    // An in-place write of the block still in flight finishes first (it marks the block; this
    // copy is then applied over an approximate one, or dropped).
    if (state != kv::BlockState::kApproximate && in_place_.count(Index(c.key))) return false;
    CopyRows(c);
    if (int8) {
      residency_->MarkApproximate(c.key.layer, c.key.kv_head, c.key.block);
    } else {
      residency_->MarkPresent(c.key.layer, c.key.kv_head, c.key.block);
    }
    ++marked;
    return true;
  });
  return marked;
}

std::int64_t StagedCopies::staged_total() const {
  std::lock_guard<std::mutex> lock(mu_);
  return staged_total_;
}

}  // namespace smartgen::node
