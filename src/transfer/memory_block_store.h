// An in-memory BlockSource and BlockSink: K and V of each request in two dense buffers
// [layer][kv_head][block][block_tokens x head_dim], with a residency byte per block
// (absent/present). For tests and `smartgen bench transfer`; the kv layer provides the real one.
//
// Filled requests hold a deterministic pattern derived from each block's key, so a receiver
// can verify every byte without a copy of the sender's data.
//
// Thread-safety: all methods are thread-safe. Block views stay valid until RemoveRequest().
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "core/page_buffer.h"
#include "transfer/block_io.h"

namespace smartgen::transfer {

class MemoryBlockStore final : public BlockSource, public BlockSink {
 public:
  explicit MemoryBlockStore(const KvGeometry& geometry);
  ~MemoryBlockStore() override;

  const KvGeometry& geometry() const { return geometry_; }

  // Adds a request of `n_blocks` blocks per (layer, kv_head). `fill`: write the pattern and mark
  // every block present (a sender's store); else all absent (a receiver's). kInvalidArgument if
  // the id exists.
  Status AddRequest(std::uint64_t request_id, std::uint32_t n_blocks, bool fill);
  void RemoveRequest(std::uint64_t request_id);
  // Marks every block of the request absent again (its bytes stay), e.g. to repeat a transfer.
  void ResetPresence(std::uint64_t request_id);
  // Reads of layers >= n_layers answer kUnavailable ("prefill has not got there yet").
  void SetAvailableLayers(std::uint64_t request_id, std::uint32_t n_layers);

  // Present as an exact copy / as an approximate (int8 wire) copy only.
  bool IsPresent(const BlockKey& key) const;
  bool IsApproximate(const BlockKey& key) const;
  // Blocks present in either form.
  std::uint64_t PresentBlocks(std::uint64_t request_id) const;
  // OK when every exactly present block of the request holds the pattern; kDataLoss names the
  // first block that does not. Approximate blocks are not checked.
  Status VerifyRequest(std::uint64_t request_id) const;
  // The pattern of block `key`.
  static void FillPattern(const BlockKey& key, MutableBytes k, MutableBytes v);

  // Counters for tests.
  std::uint64_t ready_count() const { return ready_.load(); }
  std::uint64_t rejected_count() const { return rejected_.load(); }
  std::uint64_t approximate_count() const { return approximate_.load(); }  // int8 copies ready
  // Release() calls so far, in order.
  std::vector<std::pair<std::uint64_t, ReleaseReason>> releases() const;

  // BlockSource
  Status Read(const BlockKey& key, ConstBlockView* view) override;
  void Release(std::uint64_t request_id, ReleaseReason reason) override;
  // BlockSink
  Status Prepare(const BlockKey& key, WireFormat wire, BlockDestination* destination,
                 SinkAction* action) override;
  void OnBlockReady(const BlockKey& key, WireFormat wire, const BlockDestination&) override;
  void OnBlockRejected(const BlockKey& key, const BlockDestination&, const Status& why) override;

 private:
  struct Request {
    std::uint32_t n_blocks = 0;
    std::atomic<std::uint32_t> available_layers{0};
    std::unique_ptr<core::PageBuffer> k;  // [layer][kv_head][block][half_block_bytes]
    std::unique_ptr<core::PageBuffer> v;
    std::unique_ptr<std::atomic<std::uint8_t>[]> present;  // per block: kAbsent, kExact, ...
  };
  static constexpr std::uint8_t kAbsent = 0, kExact = 1, kApproximate = 2;
  // The request and block index of `key`, or null when out of range.
  Request* Find(const BlockKey& key, std::size_t* index) const;

  const KvGeometry geometry_;
  mutable std::shared_mutex mu_;
  std::map<std::uint64_t, std::unique_ptr<Request>> requests_;  // guarded by mu_
  std::atomic<std::uint64_t> ready_{0};
  std::atomic<std::uint64_t> rejected_{0};
  std::atomic<std::uint64_t> approximate_{0};
  mutable std::mutex releases_mu_;
  std::vector<std::pair<std::uint64_t, ReleaseReason>> releases_;  // guarded by releases_mu_
};

}  // namespace smartgen::transfer
