#include "select/attention_mass.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/elementwise.h"
#include "kernels/matmul.h"

namespace smartgen::select {

void BlockAttentionMass(const kernels::AttentionParams& p, const float* q, std::int64_t q_stride,
                        std::int64_t n_rows, std::int64_t first_pos,
                        std::span<const kernels::KvBlockRef> blocks, float* mass) {
  const std::size_t d = static_cast<std::size_t>(p.head_dim);
  const std::size_t n_q = static_cast<std::size_t>(p.n_q);
  const std::size_t n_heads_rows = static_cast<std::size_t>(n_rows) * n_q;
  std::fill(mass, mass + blocks.size(), 0.0f);
  if (n_rows <= 0 || blocks.empty()) return;

  // Keys back to back in their dtype (one copy per block), so the logits of every query are
  // one GEMM: logits[rows * n_q][n_keys] = Q K^T (kernels::MatMul, SIMD), then scale, causal
  // mask and softmax per query.
  thread_local std::vector<std::byte> keys;
  thread_local std::vector<float> queries, logits;
  thread_local std::vector<std::int64_t> key_pos;
  const std::size_t row_bytes = d * static_cast<std::size_t>(kernels::KvDTypeSize(p.dtype));
  std::size_t n_keys = 0;
  for (const auto& b : blocks) n_keys += static_cast<std::size_t>(b.n_tokens);
  keys.resize(n_keys * row_bytes);
  key_pos.resize(n_keys);
  {
    std::size_t at = 0;
    for (const auto& b : blocks) {
      std::memcpy(keys.data() + at * row_bytes, b.k, b.n_tokens * row_bytes);
      for (std::int32_t t = 0; t < b.n_tokens; ++t) key_pos[at + t] = b.first_pos + t;
      at += static_cast<std::size_t>(b.n_tokens);
    }
  }
  queries.resize(n_heads_rows * d);
  for (std::int64_t r = 0; r < n_rows; ++r) {
    std::memcpy(queries.data() + r * n_q * d, q + r * q_stride, n_q * d * sizeof(float));
  }
  logits.resize(n_heads_rows * n_keys);
  const kernels::WeightView k_view{
      p.dtype == kernels::KvDType::kF32 ? gguf::GgmlType::kF32 : gguf::GgmlType::kF16, keys.data(),
      static_cast<std::int64_t>(n_keys), static_cast<std::int64_t>(d)};
  kernels::MatMul(k_view, queries.data(), static_cast<std::int64_t>(n_heads_rows), logits.data(),
                  nullptr);

  const float neg_inf = -std::numeric_limits<float>::infinity();
  std::vector<double> acc(blocks.size(), 0.0);
  for (std::size_t qi = 0; qi < n_heads_rows; ++qi) {
    const std::int64_t pos = first_pos + static_cast<std::int64_t>(qi / n_q);
    float* lg = logits.data() + qi * n_keys;
    for (std::size_t k = 0; k < n_keys; ++k) lg[k] = key_pos[k] > pos ? neg_inf : lg[k] * p.scale;
    if (kernels::Softmax(lg, static_cast<std::int64_t>(n_keys)) == neg_inf) continue;
    std::size_t at = 0;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      float sum = 0;
      for (std::int32_t t = 0; t < blocks[b].n_tokens; ++t, ++at) sum += lg[at];
      acc[b] += sum;
    }
  }
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    mass[b] = static_cast<float>(acc[b] / static_cast<double>(n_heads_rows));
  }
}

}  // namespace smartgen::select
