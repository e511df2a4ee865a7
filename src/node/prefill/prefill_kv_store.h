// PrefillKvStore: the prefill node's KV of in-flight requests, served to the transfer engine
// as a BlockSource. A request's layer l is readable once prefill has computed it
// (MarkLayerDone); until then reads say kUnavailable and the engine retries. The engine's
// lease decides when the KV is freed: Release() drops the request, and its blocks return to
// the pool once the last user (the prefill worker or an in-flight read) lets go.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "kv/block_pool.h"
#include "kv/sequence_kv.h"
#include "transfer/block_io.h"

namespace smartgen::node {

class PrefillKvStore final : public transfer::BlockSource {
 public:
  struct Entry {
    explicit Entry(kv::BlockPool* pool) : kv(pool) {}
    kv::SequenceKv kv;
    std::atomic<int> layers_done{0};
    std::atomic<bool> released{false};
  };

  explicit PrefillKvStore(kv::BlockPool* pool) : pool_(pool) {}
  // Called (on an engine thread) after a request's lease ended and its KV was dropped.
  void set_on_release(std::function<void(std::uint64_t)> fn) { on_release_ = std::move(fn); }

  // Registers a request and returns its (empty) KV. kAlreadyExists-like kInvalidArgument if the
  // id is in use.
  Result<std::shared_ptr<Entry>> Add(std::uint64_t request_id);
  // Layers [0, layer] of the request are computed and readable.
  void MarkLayerDone(std::uint64_t request_id, int layer);
  // Drops the request now (cancelled before the engine ever held it).
  void Remove(std::uint64_t request_id);
  std::size_t size() const;
  // Whether the request's KV is held here (added, not yet removed or released).
  bool Contains(std::uint64_t request_id) const { return Find(request_id) != nullptr; }

  // transfer::BlockSource
  Status Read(const transfer::BlockKey& key, transfer::ConstBlockView* view) override;
  void Release(std::uint64_t request_id, transfer::ReleaseReason reason) override;

 private:
  std::shared_ptr<Entry> Find(std::uint64_t request_id) const;

  kv::BlockPool* pool_;
  std::function<void(std::uint64_t)> on_release_;
  mutable std::mutex mu_;
  std::unordered_map<std::uint64_t, std::shared_ptr<Entry>> entries_;
};

}  // namespace smartgen::node
