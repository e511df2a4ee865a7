#include "select/speculative.h"

#include <algorithm>
#include <cmath>

namespace smartgen::select {

std::vector<kv::BlockKey> SpeculativeOrder(std::span<const LayerPushPlan> plans) {
  std::vector<kv::BlockKey> out;
  std::size_t longest = 0, total = 0;
  for (const LayerPushPlan& p : plans) {
    longest = std::max(longest, p.rest.size());
    total += p.rest.size();
  }
  out.reserve(total);
  for (std::size_t i = 0; i < longest; ++i) {
    for (const LayerPushPlan& p : plans) {
      if (i < p.rest.size()) out.push_back(p.rest[i]);
    }
  }
  return out;
}

std::int64_t SpeculativeStream::Next(std::int64_t max_blocks, const kv::BlockSet& skip,
                                     std::vector<kv::BlockKey>* out) {
  std::int64_t n = 0;
  while (n < max_blocks && next_ < order_.size()) {
    const kv::BlockKey& k = order_[next_++];
    if (skip.Contains(k)) continue;
    out->push_back(k);
    ++n;
  }
  return n;
}

std::int64_t SpeculativeBytesForStep(const SpeculativePacing& pacing, std::int64_t remaining_bytes,
                                     std::size_t block_bytes) {
  if (remaining_bytes <= 0) return 0;
  const std::int64_t bb = static_cast<std::int64_t>(block_bytes);
  std::int64_t want = static_cast<std::int64_t>(
      std::ceil(pacing.fraction_per_step * static_cast<double>(remaining_bytes)));
  want = std::max({want, pacing.min_bytes_per_step, bb});
  want = (want + bb - 1) / bb * bb;
  return std::min(want, remaining_bytes);
}

}  // namespace smartgen::select
