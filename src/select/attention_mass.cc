#include "select/attention_mass.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/fp16.h"

namespace smartgen::select {

void BlockAttentionMass(const kernels::AttentionParams& p, const float* q, std::int64_t q_stride,
                        std::int64_t n_rows, std::int64_t first_pos,
                        std::span<const kernels::KvBlockRef> blocks, float* mass) {
  const std::size_t d = static_cast<std::size_t>(p.head_dim);
  const std::size_t n_q = static_cast<std::size_t>(p.n_q);
  const std::size_t n_heads_rows = static_cast<std::size_t>(n_rows) * n_q;
  std::fill(mass, mass + blocks.size(), 0.0f);
  if (n_rows <= 0 || blocks.empty()) return;

  // Keys in f32, all blocks back to back, with each key's position.
  thread_local std::vector<float> keys, logits;
  thread_local std::vector<double> block_sum;
  thread_local std::vector<std::int64_t> key_pos;
  std::size_t n_keys = 0;
  for (const auto& b : blocks) n_keys += static_cast<std::size_t>(b.n_tokens);
  keys.resize(n_keys * d);
  key_pos.resize(n_keys);
  {
    std::size_t at = 0;
    for (const auto& b : blocks) {
      for (std::int32_t t = 0; t < b.n_tokens; ++t, ++at) {
        float* dst = keys.data() + at * d;
        if (p.dtype == kernels::KvDType::kF32) {
          std::copy_n(static_cast<const float*>(b.k) + t * d, d, dst);
        } else {
          const auto* src = static_cast<const kernels::f16_t*>(b.k) + t * d;
          for (std::size_t i = 0; i < d; ++i) dst[i] = kernels::F16ToF32(src[i]);
        }
        key_pos[at] = b.first_pos + t;
      }
    }
  }

  // One query (row, head) at a time: logits over all keys, softmax, sum per block.
  logits.resize(n_keys);
  block_sum.resize(blocks.size());
  const float neg_inf = -std::numeric_limits<float>::infinity();
  std::vector<double> acc(blocks.size(), 0.0);
  for (std::int64_t r = 0; r < n_rows; ++r) {
    const std::int64_t pos = first_pos + r;
    for (std::size_t j = 0; j < n_q; ++j) {
      const float* qj = q + r * q_stride + j * d;
      float m = neg_inf;
      for (std::size_t k = 0; k < n_keys; ++k) {
        if (key_pos[k] > pos) {
          logits[k] = neg_inf;
          continue;
        }
        const float* kk = keys.data() + k * d;
        float s = 0;
        for (std::size_t i = 0; i < d; ++i) s += qj[i] * kk[i];
        logits[k] = s * p.scale;
        m = std::max(m, logits[k]);
      }
      if (m == neg_inf) continue;
      double total = 0;
      std::size_t at = 0;
      for (std::size_t b = 0; b < blocks.size(); ++b) {
        double sum = 0;
        for (std::int32_t t = 0; t < blocks[b].n_tokens; ++t, ++at) {
          if (logits[at] != neg_inf) sum += std::exp(logits[at] - m);
        }
        block_sum[b] = sum;
        total += sum;
      }
      for (std::size_t b = 0; b < blocks.size(); ++b) acc[b] += block_sum[b] / total;
    }
  }
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    mass[b] = static_cast<float>(acc[b] / static_cast<double>(n_heads_rows));
  }
}

}  // namespace smartgen::select
