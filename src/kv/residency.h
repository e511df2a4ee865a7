// Residency: where each block of a sequence's prompt KV is on the decode node
// (DESIGN.md section 3): ABSENT -> REQUESTED -> PRESENT, one atomic byte per
// (layer, kv_head, block), plus per-layer and total present counts. APPROXIMATE is a block
// held as a decoded int8 wire copy (transfer/int8_wire.h): usable by attention and counted as
// present, but the sequence is exact only once every such block was replaced (MarkPresent).
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
  // Marks every block of every layer present (a node that computed the KV itself).
  void MarkAllPresent();

  std::int64_t present_in_layer(int layer) const {
    return layer_present_[layer].load(std::memory_order_acquire);
  }
  bool LayerComplete(int layer) const {
    return present_in_layer(layer) == n_blocks_ * n_kv_heads_;
  }
  std::int64_t present_total() const { return total_present_.load(std::memory_order_acquire); }
  // Of present_total(): blocks held approximately.
  std::int64_t approximate_total() const {
    return total_approximate_.load(std::memory_order_acquire);
  }
  // Every block of every layer is present exactly: the sequence is exact.
  bool AllPresent() const { return present_total() == total_blocks() && approximate_total() == 0; }

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
  std::atomic<std::int64_t> total_present_{0};
  std::atomic<std::int64_t> total_approximate_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ = false;
};

}  // namespace smartgen::kv
