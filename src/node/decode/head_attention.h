// HeadAttention: one decode token's attention over each KV head's own list of blocks, spread
// over the thread pool - the decode node's selective path (SmartgenSession) attends this way,
// as the dense forward pass does for a request holding its whole KV.
//
// Each head's list is cut into contiguous parts so that heads x parts keeps every thread busy
// (3 KV heads on 2 threads would leave one idle a third of the time); the parts' results are
// merged by log-sum-exp (kernels/lse_merge.h), exact up to float rounding. A step with little
// work runs on the calling thread: a pool round trip would cost more than it saves.
//
// Thread-safety: one caller at a time (the scratch is reused); the caller must not be one of
// the pool's workers.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/attention.h"

namespace smartgen::node {

class HeadAttention {
 public:
  HeadAttention(int n_kv_heads, int n_group, int head_dim);

  // refs[h]: head h's blocks in position order (keys past `pos` masked). q and out:
  // [n_kv_heads][n_group][head_dim]; lse: [n_kv_heads][n_group], kernels::kNoKeysLse for a
  // head without keys. `pool` may be null (then everything runs here).
  void Run(core::ThreadPool* pool, const kernels::AttentionParams& p, const float* q,
           std::int64_t pos, std::span<const std::vector<kernels::KvBlockRef>> refs, float* out,
           float* lse);

  // Below this many (key position x KV head) rows a step runs on the calling thread.
  static constexpr std::int64_t kInlineRows = 2048;
  // Parts per pool thread the heads are cut into, and the fewest blocks a part holds.
  static constexpr int kItemsPerThread = 2;
  static constexpr std::size_t kMinBlocksPerPart = 4;

 private:
  struct Item {
    int head;
    std::size_t begin, end;  // the head's blocks [begin, end)
  };

  int n_kv_heads_, n_group_, head_dim_;
  std::vector<Item> items_;
  std::vector<int> first_item_;  // [n_kv_heads + 1]: head h's items are [first[h], first[h+1])
  std::vector<float> part_out_, part_lse_;  // [items][n_group][head_dim], [items][n_group]
};

}  // namespace smartgen::node
