#include "transfer/lease_table.h"

namespace smartgen::transfer {

LeaseTable::LeaseTable(core::Nanos default_ttl, core::Nanos tombstone_ttl)
    : default_ttl_(default_ttl), tombstone_ttl_(tombstone_ttl) {}

bool LeaseTable::Hold(std::uint64_t request_id, core::Nanos ttl, core::Nanos now) {
  auto [it, added] = leases_.try_emplace(request_id);
  Lease& lease = it->second;
  if (lease.released) return false;
  if (added) ++active_;
  if (ttl > 0 || added) lease.ttl = ttl > 0 ? ttl : default_ttl_;
  lease.expires = now + lease.ttl;
  return true;
}

void LeaseTable::Touch(std::uint64_t request_id, core::Nanos now) {
  auto it = leases_.find(request_id);
  if (it != leases_.end() && !it->second.released) it->second.expires = now + it->second.ttl;
}

std::optional<ReleaseReason> LeaseTable::Released(std::uint64_t request_id) const {
  auto it = leases_.find(request_id);
  if (it == leases_.end() || !it->second.released) return std::nullopt;
  return it->second.reason;
}

bool LeaseTable::Pin(std::uint64_t request_id, core::Nanos now) {
  if (!Hold(request_id, 0, now)) return false;
  ++leases_[request_id].pins;
  return true;
}

std::optional<LeaseRelease> LeaseTable::Unpin(std::uint64_t request_id) {
  auto it = leases_.find(request_id);
  if (it == leases_.end()) return std::nullopt;
  Lease& lease = it->second;
  if (lease.pins > 0) --lease.pins;
  if (lease.released && lease.pins == 0 && !lease.reported) {
    lease.reported = true;
    return LeaseRelease{request_id, lease.reason};
  }
  return std::nullopt;
}

std::optional<LeaseRelease> LeaseTable::Release(std::uint64_t request_id, ReleaseReason reason,
                                                core::Nanos now) {
  auto [it, added] = leases_.try_emplace(request_id);
  Lease& lease = it->second;
  if (lease.released) return std::nullopt;
  if (!added) --active_;
  lease.released = true;
  lease.reason = reason;
  lease.released_at = now;
  if (!added) ++released_counts_[static_cast<int>(reason)];
  if (added) {
    // Never held here: remember the tombstone, but there is nothing to tell the source.
    lease.reported = true;
    return std::nullopt;
  }
  if (lease.pins > 0) return std::nullopt;
  lease.reported = true;
  return LeaseRelease{request_id, reason};
}

std::vector<LeaseRelease> LeaseTable::Expire(core::Nanos now, std::vector<std::uint64_t>* expired) {
  std::vector<LeaseRelease> due;
  for (auto it = leases_.begin(); it != leases_.end();) {
    Lease& lease = it->second;
    if (lease.released) {
      if (lease.reported && now - lease.released_at > tombstone_ttl_) {
        it = leases_.erase(it);
        continue;
      }
    } else if (lease.pins == 0 && now >= lease.expires) {
      lease.released = true;
      lease.reason = ReleaseReason::kExpired;
      lease.released_at = now;
      lease.reported = true;
      --active_;
      ++released_counts_[static_cast<int>(ReleaseReason::kExpired)];
      expired->push_back(it->first);
      due.push_back({it->first, ReleaseReason::kExpired});
    }
    ++it;
  }
  return due;
}

std::vector<LeaseRelease> LeaseTable::ReleaseAll(ReleaseReason reason) {
  std::vector<LeaseRelease> due;
  for (auto& [id, lease] : leases_) {
    if (lease.released) {
      if (!lease.reported) {
        lease.reported = true;
        due.push_back({id, lease.reason});
      }
      continue;
    }
    lease.released = true;
    lease.reason = reason;
    lease.reported = true;
    --active_;
    ++released_counts_[static_cast<int>(reason)];
    due.push_back({id, reason});
  }
  return due;
}

}  // namespace smartgen::transfer
