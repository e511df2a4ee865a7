#include "transfer/transfer_op.h"

#include <algorithm>
#include <tuple>

namespace smartgen::transfer {
namespace {

auto RunKey(const BlockRange& r) { return std::tie(r.request_id, r.layer, r.kv_head, r.first_block); }

bool SameRow(const BlockRange& a, const BlockRange& b) {
  return a.request_id == b.request_id && a.layer == b.layer && a.kv_head == b.kv_head;
}

}  // namespace

std::vector<BlockRange> NormalizeRanges(std::vector<BlockRange> ranges) {
  ranges.erase(std::remove_if(ranges.begin(), ranges.end(),
                              [](const BlockRange& r) { return r.n_blocks == 0; }),
               ranges.end());
  std::sort(ranges.begin(), ranges.end(),
            [](const BlockRange& a, const BlockRange& b) { return RunKey(a) < RunKey(b); });
  std::vector<BlockRange> out;
  for (const BlockRange& r : ranges) {
    if (!out.empty() && SameRow(out.back(), r) && r.first_block <= out.back().end_block()) {
      const std::int32_t end = std::max(out.back().end_block(), r.end_block());
      out.back().n_blocks = end - out.back().first_block;
    } else {
      out.push_back(r);
    }
  }
  return out;
}

TransferOp::TransferOp(std::uint64_t id, PeerId peer, Direction direction, Priority priority,
                       std::vector<BlockRange> ranges,
                       const std::vector<std::uint32_t>& generations, core::Deadline deadline,
                       core::Nanos now)
    : id_(id), peer_(peer), direction_(direction), priority_(priority), deadline_(deadline) {
  runs_.reserve(ranges.size());
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    runs_.push_back({ranges[i], generations[i], std::vector<std::uint8_t>(ranges[i].n_blocks, 0)});
    blocks_total_ += ranges[i].n_blocks;
  }
  last_progress = now;
  last_request = now;
}

void TransferOp::Finish(TransferState state, Status status, core::Nanos now) {
  state_ = state;
  status_ = std::move(status);
  finished_at_ = now;
  in_flight_.clear();
  corrupt_.clear();
}

int TransferOp::FindRun(const BlockKey& key) const {
  const BlockRange probe{key.request_id, {key.layer, key.kv_head, key.block, 1}};
  auto it = std::upper_bound(runs_.begin(), runs_.end(), probe, [](const BlockRange& p, const Run& r) {
    return RunKey(p) < RunKey(r.range);
  });
  if (it == runs_.begin()) return -1;
  --it;
  if (!SameRow(it->range, probe) || key.block < it->range.first_block ||
      key.block >= it->range.end_block()) {
    return -1;
  }
  return static_cast<int>(it - runs_.begin());
}

bool TransferOp::Covers(const BlockKey& key) const { return FindRun(key) >= 0; }

bool TransferOp::IsDone(const BlockKey& key) const {
  const int i = FindRun(key);
  return i >= 0 && runs_[i].done[key.block - runs_[i].range.first_block] != 0;
}

bool TransferOp::Touches(std::uint64_t request_id) const {
  return std::any_of(runs_.begin(), runs_.end(),
                     [&](const Run& r) { return r.range.request_id == request_id; });
}

std::uint32_t TransferOp::MarkDone(const BlockRange& range) {
  std::uint32_t added = 0;
  for (std::int32_t i = 0; i < range.n_blocks; ++i) {
    const BlockKey key = range.Key(i);
    const int r = FindRun(key);
    if (r < 0) continue;
    std::uint8_t& d = runs_[r].done[key.block - runs_[r].range.first_block];
    if (d == 0) {
      d = 1;
      ++added;
    }
  }
  blocks_done_ += added;
  return added;
}

std::vector<PullEntry> TransferOp::Missing() const {
  std::vector<PullEntry> out;
  for (const Run& run : runs_) {
    std::int32_t i = 0;
    while (i < run.range.n_blocks) {
      if (run.done[i]) {
        ++i;
        continue;
      }
      std::int32_t j = i;
      while (j < run.range.n_blocks && !run.done[j]) ++j;
      BlockRange r = run.range;
      r.first_block = run.range.first_block + i;
      r.n_blocks = j - i;
      out.push_back({r, run.generation});
      i = j;
    }
  }
  return out;
}

std::vector<PullEntry> TransferOp::AllEntries() const {
  std::vector<PullEntry> out;
  out.reserve(runs_.size());
  for (const Run& run : runs_) out.push_back({run.range, run.generation});
  return out;
}

int TransferOp::RecordSent(const BlockRange& range, core::Nanos now) {
  InFlight& f = in_flight_[range.Key(0)];
  f.n_blocks = range.n_blocks;
  f.sent_at = now;
  return ++f.attempts;
}

int TransferOp::TakeInFlight(const BlockRange& range) {
  auto it = in_flight_.find(range.Key(0));
  if (it == in_flight_.end()) return 0;
  const int attempts = it->second.attempts;
  in_flight_.erase(it);
  return attempts;
}

std::vector<std::pair<BlockRange, int>> TransferOp::TimedOut(core::Nanos cutoff, core::Nanos now) {
  std::vector<std::pair<BlockRange, int>> out;
  for (auto& [key, f] : in_flight_) {
    if (f.sent_at >= cutoff) continue;
    out.push_back(
        {BlockRange{key.request_id, {key.layer, key.kv_head, key.block, f.n_blocks}}, f.attempts});
    f.sent_at = now;
  }
  return out;
}

int TransferOp::CountCorrupt(const BlockRange& range) { return ++corrupt_[range.Key(0)]; }

TransferProgress TransferOp::Snapshot(std::size_t block_bytes) const {
  TransferProgress p;
  p.state = state_;
  p.blocks_total = blocks_total_;
  p.blocks_done = blocks_done_;
  p.bytes_done = blocks_done_ * block_bytes;
  p.retries = retries;
  p.status = status_;
  return p;
}

}  // namespace smartgen::transfer
