#include "transfer/memory_block_store.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace smartgen::transfer {
namespace {

std::uint64_t Mix(std::uint64_t x) {
  x ^= x >> 31;
  x *= 0x7FB5D329728EA185ull;
  x ^= x >> 27;
  x *= 0x81DADEF4BC2DD44Dull;
  return x ^ (x >> 33);
}

std::uint64_t KeySeed(const BlockKey& key) {
  return Mix(
      key.request_id * 0x9E3779B97F4A7C15ull ^ (static_cast<std::uint64_t>(key.layer) << 42) ^
      (static_cast<std::uint64_t>(key.kv_head) << 21) ^ static_cast<std::uint64_t>(key.block));
}

void Pattern(std::uint64_t seed, MutableBytes out) {
  std::uint64_t word = seed;
  std::size_t i = 0;
  for (; i + 8 <= out.size(); i += 8) {
    std::memcpy(out.data() + i, &word, 8);
    word += 0x9E3779B97F4A7C15ull;
  }
  for (; i < out.size(); ++i) out[i] = static_cast<std::byte>(word >> (8 * (i % 8)));
}

bool MatchesPattern(std::uint64_t seed, ConstBytes in) {
  std::uint64_t word = seed;
  std::size_t i = 0;
  for (; i + 8 <= in.size(); i += 8) {
    std::uint64_t got;
    std::memcpy(&got, in.data() + i, 8);
    if (got != word) return false;
    word += 0x9E3779B97F4A7C15ull;
  }
  for (; i < in.size(); ++i) {
    if (in[i] != static_cast<std::byte>(word >> (8 * (i % 8)))) return false;
  }
  return true;
}

}  // namespace

MemoryBlockStore::MemoryBlockStore(const KvGeometry& geometry) : geometry_(geometry) {}
MemoryBlockStore::~MemoryBlockStore() = default;

void MemoryBlockStore::FillPattern(const BlockKey& key, MutableBytes k, MutableBytes v) {
  const std::uint64_t seed = KeySeed(key);
  Pattern(seed, k);
  Pattern(~seed, v);
}

Status MemoryBlockStore::AddRequest(std::uint64_t request_id, std::uint32_t n_blocks, bool fill) {
  auto r = std::make_unique<Request>();
  r->n_blocks = n_blocks;
  r->available_layers = geometry_.n_layers;
  const std::size_t blocks = std::size_t{geometry_.n_layers} * geometry_.n_kv_heads * n_blocks;
  const std::size_t half = geometry_.half_block_bytes();
  r->k = std::make_unique<core::PageBuffer>(blocks * half);
  r->v = std::make_unique<core::PageBuffer>(blocks * half);
  r->present = std::make_unique<std::atomic<std::uint8_t>[]>(blocks);
  for (std::size_t i = 0; i < blocks; ++i) r->present[i].store(fill ? 1 : 0);
  if (fill) {
    std::size_t i = 0;
    for (std::int32_t l = 0; l < static_cast<std::int32_t>(geometry_.n_layers); ++l) {
      for (std::int32_t h = 0; h < static_cast<std::int32_t>(geometry_.n_kv_heads); ++h) {
        for (std::int32_t b = 0; b < static_cast<std::int32_t>(n_blocks); ++b, ++i) {
          FillPattern({request_id, {l, h, b}}, r->k->span().subspan(i * half, half),
                      r->v->span().subspan(i * half, half));
        }
      }
    }
  }
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (requests_.count(request_id)) return InvalidArgument("request {} exists", request_id);
  requests_.emplace(request_id, std::move(r));
  return Status::Ok();
}

void MemoryBlockStore::RemoveRequest(std::uint64_t request_id) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  requests_.erase(request_id);
}

void MemoryBlockStore::ResetPresence(std::uint64_t request_id) {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = requests_.find(request_id);
  if (it == requests_.end()) return;
  const std::size_t blocks =
      std::size_t{geometry_.n_layers} * geometry_.n_kv_heads * it->second->n_blocks;
  for (std::size_t i = 0; i < blocks; ++i) it->second->present[i].store(0);
}

void MemoryBlockStore::SetAvailableLayers(std::uint64_t request_id, std::uint32_t n_layers) {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = requests_.find(request_id);
  if (it != requests_.end()) it->second->available_layers.store(n_layers);
}

MemoryBlockStore::Request* MemoryBlockStore::Find(const BlockKey& key, std::size_t* index) const {
  auto it = requests_.find(key.request_id);
  if (it == requests_.end()) return nullptr;
  Request* r = it->second.get();
  const kv::BlockGrid grid{static_cast<int>(geometry_.n_layers),
                           static_cast<int>(geometry_.n_kv_heads),
                           static_cast<std::int32_t>(r->n_blocks)};
  if (!grid.Contains(key.key())) return nullptr;
  *index = static_cast<std::size_t>(grid.Index(key.key()));
  return r;
}

bool MemoryBlockStore::IsPresent(const BlockKey& key) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::size_t i = 0;
  Request* r = Find(key, &i);
  return r && r->present[i].load(std::memory_order_acquire) == kExact;
}

bool MemoryBlockStore::IsApproximate(const BlockKey& key) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::size_t i = 0;
  Request* r = Find(key, &i);
  return r && r->present[i].load(std::memory_order_acquire) == kApproximate;
}

std::uint64_t MemoryBlockStore::PresentBlocks(std::uint64_t request_id) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = requests_.find(request_id);
  if (it == requests_.end()) return 0;
  const std::size_t blocks =
      std::size_t{geometry_.n_layers} * geometry_.n_kv_heads * it->second->n_blocks;
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < blocks; ++i) n += it->second->present[i].load() != kAbsent;
  return n;
}

Status MemoryBlockStore::VerifyRequest(std::uint64_t request_id) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = requests_.find(request_id);
  if (it == requests_.end()) return NotFound("request {}", request_id);
  const Request& r = *it->second;
  const std::size_t half = geometry_.half_block_bytes();
  std::size_t i = 0;
  for (std::int32_t l = 0; l < static_cast<std::int32_t>(geometry_.n_layers); ++l) {
    for (std::int32_t h = 0; h < static_cast<std::int32_t>(geometry_.n_kv_heads); ++h) {
      for (std::int32_t b = 0; b < static_cast<std::int32_t>(r.n_blocks); ++b, ++i) {
        if (r.present[i].load() != kExact) continue;
        const BlockKey key{request_id, {l, h, b}};
        const std::uint64_t seed = KeySeed(key);
        if (!MatchesPattern(seed, r.k->span().subspan(i * half, half)) ||
            !MatchesPattern(~seed, r.v->span().subspan(i * half, half))) {
          return DataLoss("block {} does not hold its pattern", ToString(key));
        }
      }
    }
  }
  return Status::Ok();
}

std::vector<std::pair<std::uint64_t, ReleaseReason>> MemoryBlockStore::releases() const {
  std::lock_guard<std::mutex> lock(releases_mu_);
  return releases_;
}

Status MemoryBlockStore::Read(const BlockKey& key, ConstBlockView* view) {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::size_t i = 0;
  Request* r = Find(key, &i);
  if (r == nullptr) return NotFound("no block {}", ToString(key));
  if (static_cast<std::uint32_t>(key.layer) >= r->available_layers.load()) {
    return Unavailable("block {} is not computed yet", ToString(key));
  }
  const std::size_t half = geometry_.half_block_bytes();
  view->k = r->k->span().subspan(i * half, half);
  view->v = r->v->span().subspan(i * half, half);
  return Status::Ok();
}

void MemoryBlockStore::Release(std::uint64_t request_id, ReleaseReason reason) {
  std::lock_guard<std::mutex> lock(releases_mu_);
  releases_.emplace_back(request_id, reason);
}

Status MemoryBlockStore::Prepare(const BlockKey& key, WireFormat wire,
                                 BlockDestination* destination, SinkAction* action) {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::size_t i = 0;
  Request* r = Find(key, &i);
  if (r == nullptr) return NotFound("no block {}", ToString(key));
  const std::uint8_t state = r->present[i].load(std::memory_order_acquire);
  // An exact copy replaces an approximate one in place (no reader runs concurrently here).
  if (state == kExact || (wire == WireFormat::kInt8 && state == kApproximate)) {
    *action = SinkAction::kDiscard;
    return Status::Ok();
  }
  const std::size_t half = geometry_.half_block_bytes();
  destination->k = r->k->span().subspan(i * half, half);
  destination->v = r->v->span().subspan(i * half, half);
  *action = SinkAction::kWrite;
  return Status::Ok();
}

void MemoryBlockStore::OnBlockReady(const BlockKey& key, WireFormat wire, const BlockDestination&) {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::size_t i = 0;
  if (Request* r = Find(key, &i)) {
    r->present[i].store(wire == WireFormat::kInt8 ? kApproximate : kExact,
                        std::memory_order_release);
  }
  ready_.fetch_add(1);
  if (wire == WireFormat::kInt8) approximate_.fetch_add(1);
}

void MemoryBlockStore::OnBlockRejected(const BlockKey& key, const BlockDestination&,
                                       const Status& why) {
  rejected_.fetch_add(1);
}

}  // namespace smartgen::transfer
