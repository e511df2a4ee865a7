// Speculative ordering (DESIGN.md section 4.3): the order in which every block the proactive
// path did not push streams in the background, and how fast.
//
// Order: each layer's remaining blocks in importance order (LayerPushPlan::rest: prior x
// request score, else recency), layers interleaved round-robin (the i-th block of layer 0,
// of layer 1, ..., then the (i+1)-th), so every layer approaches completeness together.
// SpeculativeStream hands the order out in batches and skips, at the moment of each batch,
// whatever the caller says was already sent or requested (the decode node's on-demand
// requests), so no block is sent twice; together with the skipped blocks its batches cover
// every block of the order exactly once.
//
// Pacing: bytes per decode step = max(one block, fraction x the bytes still to stream),
// default a tenth, rounded up to whole blocks: a geometric drain that keeps most of the link
// for on-demand fetches early, when the remainder is large and the fetches matter most.
//
// Thread-safety: SpeculativeStream is not synchronised (one per request, on its sender).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "select/layer_selection.h"
#include "select/proactive.h"

namespace smartgen::select {

// The interleaved importance order of every plan's `rest` blocks.
std::vector<kv::BlockKey> SpeculativeOrder(std::span<const LayerPushPlan> plans);

class SpeculativeStream {
 public:
  // `order` must not repeat a block; `skip` sets passed to Next must cover its keys' grid.
  explicit SpeculativeStream(std::vector<kv::BlockKey> order) : order_(std::move(order)) {}

  // Appends to `out` up to max_blocks blocks of the order not yet handed out and not in
  // `skip`, in order; returns how many. Blocks in `skip` are passed over for good.
  std::int64_t Next(std::int64_t max_blocks, const kv::BlockSet& skip,
                    std::vector<kv::BlockKey>* out);
  // Blocks not yet handed out or passed over (an upper bound on what is left to send).
  std::int64_t remaining() const { return std::ssize(order_) - static_cast<std::int64_t>(next_); }
  bool done() const { return next_ == order_.size(); }

 private:
  std::vector<kv::BlockKey> order_;
  std::size_t next_ = 0;
};

struct SpeculativePacing {
  double fraction_per_step = 0.1;       // of the bytes still to stream
  std::int64_t min_bytes_per_step = 0;  // floor; at least one block either way
};

// Bytes to stream during the next decode step: max(one block, min_bytes_per_step,
// fraction x remaining_bytes), rounded up to whole blocks and capped at remaining_bytes.
std::int64_t SpeculativeBytesForStep(const SpeculativePacing& pacing, std::int64_t remaining_bytes,
                                     std::size_t block_bytes);

}  // namespace smartgen::select
