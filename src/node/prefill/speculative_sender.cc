#include "node/prefill/speculative_sender.h"

#include "core/log.h"
#include "node/prefill/smartgen_prefill.h"

namespace smartgen::node {

struct SpeculativeSender::Stream {
  std::uint64_t request_id;
  transfer::PeerId peer;
  select::SpeculativeStream stream;
  kv::BlockSet skip;
  select::SpeculativePacing pacing;
  core::Deadline deadline;
  std::optional<transfer::TransferHandle> in_flight;
  std::int64_t in_flight_blocks = 0;

  Stream(std::uint64_t id, transfer::PeerId p, select::SpeculativeStream s, kv::BlockSet k,
         select::SpeculativePacing pc, core::Deadline d)
      : request_id(id),
        peer(p),
        stream(std::move(s)),
        skip(std::move(k)),
        pacing(pc),
        deadline(d) {}
};

SpeculativeSender::SpeculativeSender(transfer::Endpoint* endpoint, std::size_t block_bytes,
                                     double link_bytes_per_s)
    : endpoint_(endpoint), block_bytes_(block_bytes), link_bytes_per_s_(link_bytes_per_s) {
  thread_ = std::thread([this] { Loop(); });
}

SpeculativeSender::~SpeculativeSender() { Stop(); }

void SpeculativeSender::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SpeculativeSender::Add(std::uint64_t request_id, transfer::PeerId peer,
                            select::SpeculativeStream stream, kv::BlockSet skip,
                            select::SpeculativePacing pacing, core::Deadline deadline) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    streams_[request_id] = std::make_unique<Stream>(request_id, peer, std::move(stream),
                                                    std::move(skip), pacing, deadline);
  }
  cv_.notify_all();
}

void SpeculativeSender::MarkRequested(std::uint64_t request_id,
                                      std::span<const kv::BlockKey> keys) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(request_id);
  if (it == streams_.end()) return;
  for (const auto& k : keys) {
    if (it->second->skip.grid().Contains(k)) it->second->skip.Insert(k);
  }
}

std::int64_t SpeculativeSender::Remove(std::uint64_t request_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(request_id);
  if (it == streams_.end()) return -1;
  const std::int64_t left = it->second->stream.remaining();
  blocks_cancelled_ += static_cast<std::uint64_t>(left);
  streams_.erase(it);
  return left;
}

void SpeculativeSender::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(5));
    for (auto it = streams_.begin(); it != streams_.end();) {
      Stream& s = *it->second;
      if (s.in_flight) {
        auto p = endpoint_->Poll(*s.in_flight);
        if (p.ok() && !p->terminal()) {
          ++it;
          continue;
        }
        endpoint_->Release(*s.in_flight);
        s.in_flight.reset();
        if (p.ok() && p->state != transfer::TransferState::kDone) {
          // The peer went away or cancelled the request: stop streaming it.
          blocks_cancelled_ += static_cast<std::uint64_t>(s.stream.remaining() + s.in_flight_blocks);
          it = streams_.erase(it);
          continue;
        }
        blocks_sent_ += static_cast<std::uint64_t>(s.in_flight_blocks);
      }
      if (s.stream.done() || s.deadline.Expired()) {
        it = streams_.erase(it);
        continue;
      }
      const std::int64_t remaining_bytes = s.stream.remaining() * static_cast<std::int64_t>(block_bytes_);
      // An unshaped link needs no pacing: priorities already put on-demand frames first.
      std::int64_t bytes = remaining_bytes;
      if (link_bytes_per_s_ > 0) {
        bytes = select::SpeculativeBytesForStep(s.pacing, remaining_bytes, block_bytes_);
        bytes = std::min<std::int64_t>(bytes, static_cast<std::int64_t>(link_bytes_per_s_ * kBatchSeconds));
      }
      const std::int64_t max_blocks = std::max<std::int64_t>(1, bytes / static_cast<std::int64_t>(block_bytes_));
      std::vector<kv::BlockKey> keys;
      s.stream.Next(max_blocks, s.skip, &keys);
      if (keys.empty()) {
        ++it;
        continue;
      }
      for (const auto& k : keys) s.skip.Insert(k);
      transfer::TransferRequest t;
      t.direction = transfer::Direction::kPush;
      t.priority = transfer::Priority::kSpeculative;
      t.deadline = s.deadline;
      t.ranges = transfer::RangesOf(s.request_id, keys);
      auto handle = endpoint_->Post(s.peer, t);
      if (!handle.ok()) {
        // Lease released (the decode node is done) or peer gone: the rest is cancelled.
        blocks_cancelled_ += static_cast<std::uint64_t>(s.stream.remaining() + std::ssize(keys));
        it = streams_.erase(it);
        continue;
      }
      s.in_flight = *handle;
      s.in_flight_blocks = static_cast<std::int64_t>(keys.size());
      ++it;
    }
  }
}

}  // namespace smartgen::node
