// Sender-side leases (internal to the endpoint): while a request's lease is held the engine may
// read its blocks from the BlockSource; a released lease is remembered (tombstone) so late pulls
// are refused, and BlockSource::Release is due once no read of the request is in flight.
// Not thread-safe: the endpoint guards it.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "transfer/block_io.h"

namespace smartgen::transfer {

// BlockSource::Release(request_id, reason) is due.
struct LeaseRelease {
  std::uint64_t request_id;
  ReleaseReason reason;
};

class LeaseTable {
 public:
  // `tombstone_ttl`: how long a released request id is remembered.
  LeaseTable(core::Nanos default_ttl, core::Nanos tombstone_ttl);

  // Takes or renews (ttl 0: the default). False if the request was released.
  bool Hold(std::uint64_t request_id, core::Nanos ttl, core::Nanos now);
  // Renews a held lease; no-op otherwise.
  void Touch(std::uint64_t request_id, core::Nanos now);
  // Whether the request's lease was released (and with which reason).
  std::optional<ReleaseReason> Released(std::uint64_t request_id) const;
  // Pins for a read, taking the lease if needed. False if released.
  bool Pin(std::uint64_t request_id, core::Nanos now);
  // Ends a read; returns the due release if this was the last pin of a released lease.
  std::optional<LeaseRelease> Unpin(std::uint64_t request_id);
  // Releases; the release is due now unless reads are in flight (then Unpin returns it).
  std::optional<LeaseRelease> Release(std::uint64_t request_id, ReleaseReason reason,
                                      core::Nanos now);
  // Releases every unpinned lease idle past its ttl: their ids go to `expired`, the due
  // releases are returned. Also forgets old tombstones.
  std::vector<LeaseRelease> Expire(core::Nanos now, std::vector<std::uint64_t>* expired);
  // Releases everything (endpoint shutdown); pins are ignored.
  std::vector<LeaseRelease> ReleaseAll(ReleaseReason reason);

  std::uint64_t active() const { return active_; }
  std::uint64_t released(ReleaseReason reason) const {
    return released_counts_[static_cast<int>(reason)];
  }

 private:
  struct Lease {
    core::Nanos ttl = 0;
    core::Nanos expires = 0;
    int pins = 0;
    bool released = false;
    ReleaseReason reason = ReleaseReason::kCompleted;
    core::Nanos released_at = 0;
    bool reported = false;  // BlockSource::Release was handed out
  };
  const core::Nanos default_ttl_;
  const core::Nanos tombstone_ttl_;
  std::unordered_map<std::uint64_t, Lease> leases_;
  std::uint64_t active_ = 0;
  std::uint64_t released_counts_[3] = {0, 0, 0};
};

}  // namespace smartgen::transfer
