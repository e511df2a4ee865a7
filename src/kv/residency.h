// Residency: where each block of a sequence's prompt KV is on the decode node
// (DESIGN.md section 3): ABSENT -> REQUESTED -> PRESENT, one atomic byte per
// (layer, kv_head, block), plus per-layer and total present counts. APPROXIMATE is a block
// held as a decoded int8 wire copy (transfer/int8_wire.h): usable by attention and counted as
// present, but the sequence is exact only once every such block was replaced (MarkPresent).
//
// Needed blocks: by default every block counts. RestrictToNeeded narrows what counts to
// blocks [first_needed(l), n_blocks) of each layer l - a sliding-window layer's decode needs
// only the blocks that intersect its window (select/needed_blocks.h) - so LayerComplete and
// AllPresent wait only for those; the other blocks keep their state bytes but are never
// counted (nor expected to arrive).
//
// A block's payload is written before it is marked PRESENT (release), and a reader that sees
// PRESENT (acquire) sees the payload. Marking is idempotent: a block that arrives twice (on
// demand and speculatively) counts once. A block that failed verification goes back to ABSENT.
//
// Thread-safety: all methods are thread-safe. WaitFor* block with a deadline.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "core/clock.h"
#include "core/status.h"

namespace smartgen::kv {

enum class BlockState : std::uint8_t {
  kAbsent = 0,
  kRequested = 1,
  kPresent = 2,
  kApproximate = 3
};

class Residency {
 public:
  Residency(int n_layers, int n_kv_heads, std::int64_t n_blocks);

  int n_layers() const { return n_layers_; }
  int n_kv_heads() const { return n_kv_heads_; }
  std::int64_t n_blocks() const { return n_blocks_; }
  std::int64_t total_blocks() const { return n_blocks_ * n_layers_ * n_kv_heads_; }

  // Counts only blocks [first_needed[l], n_blocks) of each layer l from here on (values
  // clamped to [0, n_blocks]; one per layer). Call before any block is marked or the object
  // is shared.
  void RestrictToNeeded(std::span<const std::int64_t> first_needed);
  std::int64_t first_needed(int layer) const { return first_needed_[layer]; }
  bool needed(int layer, std::int64_t block) const { return block >= first_needed_[layer]; }
  std::int64_t needed_in_layer(int layer) const {
    return (n_blocks_ - first_needed_[layer]) * n_kv_heads_;
  }
  // Blocks that count, over all layers (total_blocks() unless restricted).
  std::int64_t needed_total() const { return needed_total_; }

  BlockState state(int layer, int head, std::int64_t block) const {
    return static_cast<BlockState>(At(layer, head, block).load(std::memory_order_acquire));
  }
  // Usable by attention: an exact or an approximate copy is here.
  bool present(int layer, int head, std::int64_t block) const {
    const BlockState s = state(layer, head, block);
    return s == BlockState::kPresent || s == BlockState::kApproximate;
  }
  bool exact(int layer, int head, std::int64_t block) const {
    return state(layer, head, block) == BlockState::kPresent;
  }

  // ABSENT -> REQUESTED; false if the block was not ABSENT (already asked for or present).
  bool MarkRequested(int layer, int head, std::int64_t block);
  // Any -> PRESENT; true the first time (counts), false for a duplicate. `previous`, when
  // given, receives the state before (kRequested: it arrived for an on-demand request).
  // An approximate block becoming exact returns false (it already counted).
  bool MarkPresent(int layer, int head, std::int64_t block, BlockState* previous = nullptr);
  // ABSENT/REQUESTED -> APPROXIMATE; true the first time (counts as present). A block already
  // present in either form is left as it is (false).
  bool MarkApproximate(int layer, int head, std::int64_t block, BlockState* previous = nullptr);
  // PRESENT/APPROXIMATE/REQUESTED -> ABSENT (a rejected copy); the block must be fetched again.
  void MarkAbsent(int layer, int head, std::int64_t block);
  // Marks every block of every layer present (a node that computed the KV itself); only the
  // needed ones count.
  void MarkAllPresent();

  // Needed blocks present.
  std::int64_t present_in_layer(int layer) const {
    return layer_present_[layer].load(std::memory_order_acquire);
  }
  bool LayerComplete(int layer) const { return present_in_layer(layer) == needed_in_layer(layer); }
  std::int64_t present_total() const { return total_present_.load(std::memory_order_acquire); }
  // Of present_total(): blocks held approximately.
  std::int64_t approximate_total() const {
    return total_approximate_.load(std::memory_order_acquire);
  }
  // Every needed block of every layer is present exactly: the sequence is exact.
  bool AllPresent() const { return present_total() == needed_total() && approximate_total() == 0; }

  // Waits until `pred()` holds (checked after each MarkPresent/Wake), or the deadline.
  // kDeadlineExceeded on timeout; kCancelled after Cancel().
  template <typename Pred>
  Status WaitUntil(Pred pred, core::Deadline deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    while (!pred()) {
      if (cancelled_) return Status(StatusCode::kCancelled, "residency wait cancelled");
      if (deadline.Expired()) {
        return Status(StatusCode::kDeadlineExceeded, "timed out waiting for KV blocks");
      }
      cv_.wait_for(lock, std::chrono::nanoseconds(std::min<core::Nanos>(
                             deadline.Remaining(), core::Millis(50))));
    }
    return Status::Ok();
  }
  // Wakes waiters to re-check (e.g. after a failure elsewhere).
  void Wake();
  // Makes current and future waits return kCancelled.
  void Cancel();

 private:
  std::atomic<std::uint8_t>& At(int layer, int head, std::int64_t block) const {
    return states_[(static_cast<std::int64_t>(layer) * n_kv_heads_ + head) * n_blocks_ + block];
  }

  int n_layers_;
  int n_kv_heads_;
  std::int64_t n_blocks_;
  std::unique_ptr<std::atomic<std::uint8_t>[]> states_;
  std::unique_ptr<std::atomic<std::int64_t>[]> layer_present_;
  std::vector<std::int64_t> first_needed_;  // [n_layers]
  std::int64_t needed_total_;
  std::atomic<std::int64_t> total_present_{0};
  std::atomic<std::int64_t> total_approximate_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ = false;
};

}  // namespace smartgen::kv
