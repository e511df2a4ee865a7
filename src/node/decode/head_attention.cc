#include "node/decode/head_attention.h"

#include <algorithm>
#include <cstring>

#include "kernels/lse_merge.h"

namespace smartgen::node {

HeadAttention::HeadAttention(int n_kv_heads, int n_group, int head_dim)
    : n_kv_heads_(n_kv_heads),
      n_group_(n_group),
      head_dim_(head_dim),
      first_item_(n_kv_heads + 1, 0) {}

void HeadAttention::Run(core::ThreadPool* pool, const kernels::AttentionParams& p, const float* q,
                        std::int64_t pos, std::span<const std::vector<kernels::KvBlockRef>> refs,
                        float* out, float* lse) {
  const int g = n_group_, d = head_dim_;
  const std::size_t head_floats = static_cast<std::size_t>(g) * d;
  std::int64_t rows = 0;
  for (int h = 0; h < n_kv_heads_; ++h) {
    for (const kernels::KvBlockRef& r : refs[h]) rows += r.n_tokens;
  }
  const int threads = pool != nullptr ? pool->size() : 1;
  if (threads <= 1 || rows < kInlineRows) {
    for (int h = 0; h < n_kv_heads_; ++h) {
      kernels::AttendBlocks(p, q + h * head_floats, pos, refs[h], out + h * head_floats,
                            lse + h * g);
    }
    return;
  }

  // Cut each head into up to `want` parts of at least kMinBlocksPerPart blocks.
  const int want = std::max(1, (kItemsPerThread * threads + n_kv_heads_ - 1) / n_kv_heads_);
  items_.clear();
  for (int h = 0; h < n_kv_heads_; ++h) {
    first_item_[h] = static_cast<int>(items_.size());
    const std::size_t n = refs[h].size();
    const int parts = static_cast<int>(std::clamp<std::size_t>(n / kMinBlocksPerPart, 1, want));
    for (int t = 0; t < parts; ++t) {
      const auto [b, e] = core::ThreadPool::SplitRange(static_cast<std::int64_t>(n), t, parts);
      items_.push_back({h, static_cast<std::size_t>(b), static_cast<std::size_t>(e)});
    }
  }
  first_item_[n_kv_heads_] = static_cast<int>(items_.size());
  part_out_.resize(items_.size() * head_floats);
  part_lse_.resize(items_.size() * static_cast<std::size_t>(g));

  pool->ForEachChunk(static_cast<std::int64_t>(items_.size()), [&](std::int64_t i) {
    const Item& it = items_[static_cast<std::size_t>(i)];
    const auto blocks =
        std::span<const kernels::KvBlockRef>(refs[it.head]).subspan(it.begin, it.end - it.begin);
    kernels::AttendBlocks(p, q + it.head * head_floats, pos, blocks,
                          part_out_.data() + static_cast<std::size_t>(i) * head_floats,
                          part_lse_.data() + static_cast<std::size_t>(i) * g);
  });

  // Merge each head's parts, in block order.
  for (int h = 0; h < n_kv_heads_; ++h) {
    const std::size_t first = static_cast<std::size_t>(first_item_[h]);
    std::memcpy(out + h * head_floats, part_out_.data() + first * head_floats,
                head_floats * sizeof(float));
    std::memcpy(lse + h * g, part_lse_.data() + first * g,
                static_cast<std::size_t>(g) * sizeof(float));
    for (std::size_t i = first + 1; i < static_cast<std::size_t>(first_item_[h + 1]); ++i) {
      for (int j = 0; j < g; ++j) {
        kernels::LseMergeInto(d, out + h * head_floats + static_cast<std::size_t>(j) * d,
                              lse + h * g + j,
                              part_out_.data() + i * head_floats + static_cast<std::size_t>(j) * d,
                              part_lse_[i * g + j]);
      }
    }
  }
}

}  // namespace smartgen::node
