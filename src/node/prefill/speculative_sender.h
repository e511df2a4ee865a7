// SpeculativeSender: the prefill node's background stream (DESIGN.md section 4.3). After a
// SmartGen request's prefill, every block the proactive path did not push streams to the decode
// node at the lowest priority, in importance order, in small batches: each batch is posted when
// the previous one has left, sized by the pacing rule and capped at about kBatchSeconds of link
// time, so an on-demand fetch never queues behind more than a frame and the decode node's
// "already requested" reports (MarkRequested) take effect quickly - nothing is sent twice.
// The stream stops when it is done, or when the request's lease ends (the decode node is exact
// or finished: Remove), and the blocks not yet sent never cross the link.
//
// Thread-safety: all methods are thread-safe; one internal thread posts the batches.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "select/layer_selection.h"
#include "select/speculative.h"
#include "transfer/endpoint.h"

namespace smartgen::node {

class SpeculativeSender {
 public:
  // `endpoint` must outlive the sender's thread (Stop, or the destructor). link_bytes_per_s 0 =
  // unshaped.
  SpeculativeSender(transfer::Endpoint* endpoint, std::size_t block_bytes, double link_bytes_per_s);
  ~SpeculativeSender();  // Stop()
  // Stops posting and joins the thread; the other methods keep working (they only touch the
  // stream table), so lease releases during the endpoint's shutdown still find the sender.
  void Stop();

  // Starts streaming `stream` of request_id to `peer`, skipping `skip` (the pushed blocks).
  void Add(std::uint64_t request_id, transfer::PeerId peer, select::SpeculativeStream stream,
           kv::BlockSet skip, select::SpeculativePacing pacing, core::Deadline deadline);
  // The decode node fetched these on demand: do not stream them.
  void MarkRequested(std::uint64_t request_id, std::span<const kv::BlockKey> keys);
  // Stops the request's stream (its lease ended); returns the blocks never sent (-1: unknown).
  std::int64_t Remove(std::uint64_t request_id);

  std::uint64_t blocks_sent() const { return blocks_sent_.load(); }
  std::uint64_t blocks_cancelled() const { return blocks_cancelled_.load(); }

 private:
  struct Stream;
  static constexpr double kBatchSeconds = 0.1;
  void Loop();

  transfer::Endpoint* endpoint_;
  std::size_t block_bytes_;
  double link_bytes_per_s_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::map<std::uint64_t, std::unique_ptr<Stream>> streams_;
  std::atomic<std::uint64_t> blocks_sent_{0}, blocks_cancelled_{0};
  std::thread thread_;
};

}  // namespace smartgen::node
