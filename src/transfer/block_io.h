// How KV bytes get into and out of the transfer engine, independent of the model: the sending
// side reads blocks through a BlockSource, the receiving side writes them through a BlockSink.
// The kv layer implements both over its paged storage; MemoryBlockStore is a small in-memory
// implementation for tests and benchmarks.
//
// Threading: an Endpoint calls these from its own threads (one sender and one receiver thread
// per connected peer), never while holding its internal lock, so an implementation may call
// back into the Endpoint. Calls for different peers may be concurrent.
#pragma once

#include <memory>

#include "core/status.h"
#include "transfer/types.h"

namespace smartgen::transfer {

// Read-only views of one block's K and V bytes, each KvGeometry::half_block_bytes() long.
struct ConstBlockView {
  ConstBytes k;
  ConstBytes v;
};

// Writable views of where one received block goes, each half_block_bytes() long. `owner`
// keeps the memory behind the views alive: the engine holds it until it has reported the block
// (OnBlockReady / OnBlockRejected) or abandoned the frame (a link that died mid-frame), so a
// sink may forget a request at any time without a write landing in freed memory.
struct BlockDestination {
  MutableBytes k;
  MutableBytes v;
  std::shared_ptr<const void> owner;
};

// Why the engine stopped holding a request's KV.
enum class ReleaseReason : std::uint8_t {
  kCompleted = 0,  // the receiver has every block it wanted (FinishRequest / ReleaseLease)
  kCancelled = 1,  // CancelRequest on either side
  kExpired = 2,    // the lease ran past its time-to-live without being renewed
};
std::string_view ReleaseReasonName(ReleaseReason reason);

class BlockSource {
 public:
  virtual ~BlockSource() = default;

  // Views of block `key`. The views must stay valid and unchanged until Release() is called for
  // key.request_id (the engine holds a lease on the request while it may read).
  // Errors: kUnavailable = not computed yet (the engine parks the run and retries after
  // Endpoint::NotifySourceReady() or a short backoff); kNotFound = no such request or block
  // (the transfer fails with it).
  virtual Status Read(const BlockKey& key, ConstBlockView* view) = 0;

  // The engine will not read request_id's blocks again: its KV may be freed. Called once per
  // lease, from an engine thread, after every in-flight read of the request finished.
  virtual void Release(std::uint64_t request_id, ReleaseReason reason) {}
};

// What a BlockSink wants done with an arriving block.
enum class SinkAction : std::uint8_t {
  kWrite = 0,    // write it to the returned destination
  kDiscard = 1,  // already present or no longer wanted: read it off the link and drop it
};

class BlockSink {
 public:
  virtual ~BlockSink() = default;

  // Whether `peer` may send the blocks of `range` at all (a request takes KV from one link
  // only). Called once per arriving data frame, before Prepare for any of its blocks; a
  // non-OK status rejects every block of the frame as a failed Prepare does.
  virtual Status Admit(PeerId peer, const BlockRange& range) { return Status::Ok(); }

  // Where block `key` goes. Called before its bytes are read off the link; `wire` says whether
  // the copy is exact (kNative) or approximate (kInt8, decoded into the destination). Return
  // kDiscard for a block that is already complete (for an approximate copy: already present in
  // any form): the engine never writes into a block the sink reports as present, so a
  // duplicate or corrupt copy cannot damage it. A non-OK status rejects the block (counted;
  // the sender is told). The destination must stay valid while its `owner` (or, when the sink
  // sets none, the sink itself) is alive.
  virtual Status Prepare(const BlockKey& key, WireFormat wire, BlockDestination* destination,
                         SinkAction* action) = 0;

  // The block's bytes are in `destination` (the one Prepare returned) and passed the checksum.
  // Called once per accepted copy (a block that arrives twice and is written twice is reported
  // twice).
  virtual void OnBlockReady(const BlockKey& key, WireFormat wire,
                            const BlockDestination& destination) = 0;

  // The block's destination was written but the copy failed verification: its bytes are
  // garbage and must not be used; the engine asks for it again.
  virtual void OnBlockRejected(const BlockKey& key, const BlockDestination& destination,
                               const Status& why) {}
};

}  // namespace smartgen::transfer
