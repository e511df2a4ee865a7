// Public attention entry points, the dense two-pass reference, and the scalar (online-softmax)
// kernels of the scalar table.
#include "kernels/attention.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/kernel_table.h"

namespace smartgen::kernels {
namespace {

constexpr int kMaxHeadDim = 512;

// Key or value `i` of a block as f32 into dst[head_dim].
void LoadRow(const void* base, KvDType dtype, int head_dim, std::int64_t i, float* dst) {
  if (dtype == KvDType::kF32) {
    const float* src = static_cast<const float*>(base) + i * head_dim;
    std::copy(src, src + head_dim, dst);
  } else {
    const f16_t* src = static_cast<const f16_t*>(base) + i * head_dim;
    for (int d = 0; d < head_dim; ++d) dst[d] = F16ToF32(src[d]);
  }
}

// Tokens of `b` visible from q_pos (a prefix of the block, since positions increase).
std::int64_t VisibleTokens(const KvBlockRef& b, std::int64_t q_pos) {
  return std::clamp<std::int64_t>(q_pos - b.first_pos + 1, 0, b.n_tokens);
}

// The first token of `b` inside q_pos's sliding window (0 without a window).
std::int64_t FirstInWindow(const AttentionParams& p, const KvBlockRef& b, std::int64_t q_pos) {
  return std::clamp<std::int64_t>(WindowStart(p, q_pos) - b.first_pos, 0, b.n_tokens);
}

float SoftCap(const AttentionParams& p, float s) {
  return p.softcap > 0.0f ? p.softcap * std::tanh(s / p.softcap) : s;
}

}  // namespace

namespace internal::scalar {

void AttendBlocks(const AttentionParams& p, const float* q, std::int64_t q_pos,
                  const KvBlockRef* blocks, std::size_t n_blocks, float* out, float* lse) {
  const int hd = p.head_dim;
  assert(hd <= kMaxHeadDim);
  float k[kMaxHeadDim], v[kMaxHeadDim];
  for (int h = 0; h < p.n_q; ++h) {
    const float* qh = q + static_cast<std::int64_t>(h) * hd;
    float* oh = out + static_cast<std::int64_t>(h) * hd;
    float m = -INFINITY, l = 0.0f;
    std::fill(oh, oh + hd, 0.0f);
    for (std::size_t bi = 0; bi < n_blocks; ++bi) {
      const KvBlockRef& b = blocks[bi];
      const std::int64_t nt = VisibleTokens(b, q_pos);
      for (std::int64_t t = FirstInWindow(p, b, q_pos); t < nt; ++t) {
        LoadRow(b.k, p.dtype, hd, t, k);
        float s = 0.0f;
        for (int d = 0; d < hd; ++d) s += qh[d] * k[d];
        s = SoftCap(p, s * p.scale);
        LoadRow(b.v, p.dtype, hd, t, v);
        if (s > m) {  // rescale what was accumulated under the old max
          const float c = std::exp(m - s);
          l *= c;
          for (int d = 0; d < hd; ++d) oh[d] *= c;
          m = s;
        }
        const float e = std::exp(s - m);
        l += e;
        for (int d = 0; d < hd; ++d) oh[d] += e * v[d];
      }
    }
    if (l == 0.0f) {
      lse[h] = kNoKeysLse;
      continue;
    }
    const float inv = 1.0f / l;
    for (int d = 0; d < hd; ++d) oh[d] *= inv;
    lse[h] = m + std::log(l);
  }
}

void AttendCausal(const AttentionParams& p, const float* q, std::int64_t q_stride,
                  std::int64_t n_tokens, std::int64_t first_pos, const KvBlockRef* blocks,
                  std::size_t n_blocks, float* out, std::int64_t out_stride, float* lse) {
  float lse_tmp[kMaxHeadDim];
  for (std::int64_t t = 0; t < n_tokens; ++t) {
    AttendBlocks(p, q + t * q_stride, first_pos + t, blocks, n_blocks, out + t * out_stride,
                 lse != nullptr ? lse + t * p.n_q : lse_tmp);
  }
}

}  // namespace internal::scalar

void AttendBlocks(const AttentionParams& p, const float* q, std::int64_t q_pos,
                  std::span<const KvBlockRef> blocks, float* out, float* lse) {
  internal::ActiveKernels().attend_blocks(p, q, q_pos, blocks.data(), blocks.size(), out, lse);
}

void AttendCausal(const AttentionParams& p, const float* q, std::int64_t q_stride,
                  std::int64_t n_tokens, std::int64_t first_pos, std::span<const KvBlockRef> blocks,
                  float* out, std::int64_t out_stride, float* lse) {
  internal::ActiveKernels().attend_causal(p, q, q_stride, n_tokens, first_pos, blocks.data(),
                                          blocks.size(), out, out_stride, lse);
}

void AttendBlocksReference(const AttentionParams& p, const float* q, std::int64_t q_pos,
                           std::span<const KvBlockRef> blocks, float* out, float* lse) {
  // Dense two-pass softmax: scores of every visible key, then max, then exp-sum in double.
  const int hd = p.head_dim;
  std::vector<float> keys, values;
  std::vector<float> row(static_cast<std::size_t>(hd));
  for (const KvBlockRef& b : blocks) {
    const std::int64_t nt = VisibleTokens(b, q_pos);
    for (std::int64_t t = FirstInWindow(p, b, q_pos); t < nt; ++t) {
      LoadRow(b.k, p.dtype, hd, t, row.data());
      keys.insert(keys.end(), row.begin(), row.end());
      LoadRow(b.v, p.dtype, hd, t, row.data());
      values.insert(values.end(), row.begin(), row.end());
    }
  }
  const std::size_t n = keys.size() / static_cast<std::size_t>(hd);
  std::vector<float> s(n);
  for (int h = 0; h < p.n_q; ++h) {
    const float* qh = q + static_cast<std::int64_t>(h) * hd;
    float* oh = out + static_cast<std::int64_t>(h) * hd;
    if (n == 0) {
      std::fill(oh, oh + hd, 0.0f);
      lse[h] = kNoKeysLse;
      continue;
    }
    float m = -INFINITY;
    for (std::size_t j = 0; j < n; ++j) {
      float dot = 0.0f;
      for (int d = 0; d < hd; ++d) dot += qh[d] * keys[j * hd + d];
      s[j] = SoftCap(p, dot * p.scale);
      m = std::max(m, s[j]);
    }
    double sum = 0.0;
    std::vector<double> acc(static_cast<std::size_t>(hd), 0.0);
    for (std::size_t j = 0; j < n; ++j) {
      const double e = std::exp(static_cast<double>(s[j]) - m);
      sum += e;
      for (int d = 0; d < hd; ++d) acc[d] += e * values[j * hd + d];
    }
    for (int d = 0; d < hd; ++d) oh[d] = static_cast<float>(acc[d] / sum);
    lse[h] = static_cast<float>(m + std::log(sum));
  }
}

}  // namespace smartgen::kernels
