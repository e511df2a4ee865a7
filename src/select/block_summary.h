// Block summaries (Quest-style metadata, DESIGN.md sections 3 and 4.2) and their upper-bound
// scores.
//
// For every (KV head, block) of one layer of a prompt: the channel-wise min and max of the
// block's post-RoPE (post q/k-norm) keys, 2 x head_dim values. They are stored as int8 with one
// f32 scale per (KV head, channel) for the whole layer, rounded *outward* (min down, max up), so
// the dequantized box [min_i, max_i] contains every key of the block exactly as stored (f16 or
// f32) and the score below is a true upper bound. Quantization error per bound: at most one step,
// scale_i = max |key_i| over the layer's prompt / 127 (tested).
//
// Size: 2 * head_dim bytes per block plus 4 * head_dim bytes per KV head: 3.1 % of the f16 KV
// bytes at B = 16 (2*d / (2*B*d*2)), 1.6 % of f32 KV. A layer's summaries travel as one control
// message (Serialize/Parse below), request-independent:
//   0  magic "SGBS"        4  version u16 (kSummaryVersion)   6  reserved u16 (0)
//   8  layer u32           12 n_heads u32                     16 n_blocks u32
//   20 head_dim u32        24 block_tokens u32                28 reserved u32 (0)
//   32 n_tokens u64 (prompt tokens summarised; the last block may be partial)
//   40 scales f32 [n_heads][head_dim]
//   .. bounds i8 [n_heads][2][head_dim][n_blocks] (per head the min plane, then the max plane;
//      channel-major so that scoring streams contiguous bytes: see UpperBounds)
//   .. xxh3-64 u64 of every byte before it.   All little-endian.
//
// Score (Quest): ub(b) = sum_i max(q_i * min_i, q_i * max_i) >= max_{k in b} q.k, maximised
// over the query heads of the KV head's group. With q+ = max(q, 0) * scale and
// q- = min(q, 0) * scale precomputed, ub(b) = sum_i q+_i * qmax_i[b] + q-_i * qmin_i[b]: no
// branches, and the inner loop runs over blocks of one channel (contiguous int8, vectorised).
//
// Thread-safety: immutable after Build/Parse; concurrent UpperBounds calls are safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/result.h"
#include "kv/sequence_kv.h"

namespace smartgen::select {

inline constexpr std::uint16_t kSummaryVersion = 1;
inline constexpr std::size_t kSummaryHeaderBytes = 40;

class LayerSummaries {
 public:
  LayerSummaries() = default;

  // Summarises layer `layer` of positions [0, n_tokens) of `kv` (f16 or f32). Requires
  // 0 < n_tokens <= kv.n_tokens().
  static LayerSummaries Build(const kv::SequenceKv& kv, int layer, std::int64_t n_tokens);
  // From keys given as f32 rows: keys [n_heads][n_tokens][head_dim] (for tests and tools).
  static LayerSummaries BuildFromKeys(int layer, int n_heads, int head_dim, int block_tokens,
                                      std::int64_t n_tokens, std::span<const float> keys);

  // The wire form (layout above). Parse validates magic, version, sizes and checksum:
  // kDataLoss for a short, long or corrupt buffer, kUnimplemented for another version.
  std::vector<std::byte> Serialize() const;
  std::size_t serialized_bytes() const;
  static Result<LayerSummaries> Parse(std::span<const std::byte> bytes);

  int layer() const { return layer_; }
  int n_heads() const { return n_heads_; }
  int head_dim() const { return head_dim_; }
  int block_tokens() const { return block_tokens_; }
  std::int32_t n_blocks() const { return n_blocks_; }
  std::int64_t n_tokens() const { return n_tokens_; }
  bool empty() const { return n_blocks_ == 0; }

  // Per-(head, channel) scales: [head_dim] for `head`.
  const float* scales(int head) const { return scales_.data() + std::size_t(head) * head_dim_; }
  // Quantized bounds of `head`: min plane then max plane, each [head_dim][n_blocks].
  const std::int8_t* min_plane(int head) const {
    return bounds_.data() + std::size_t(head) * 2 * head_dim_ * n_blocks_;
  }
  const std::int8_t* max_plane(int head) const {
    return min_plane(head) + std::size_t(head_dim_) * n_blocks_;
  }
  // Dequantized bounds of channel i of (head, block).
  float Min(int head, std::int32_t block, int i) const {
    return min_plane(head)[std::size_t(i) * n_blocks_ + block] * scales(head)[i];
  }
  float Max(int head, std::int32_t block, int i) const {
    return max_plane(head)[std::size_t(i) * n_blocks_ + block] * scales(head)[i];
  }

  // Upper bounds of q.k (unscaled: multiply by the attention scale if needed) for every block
  // of `head`: scores[b] = max over the n_q query heads q[j][head_dim] of ub_j(b).
  // scores: [n_blocks]. Cost: n_blocks * n_q * 2 * head_dim multiply-adds.
  void UpperBounds(int head, const float* q, int n_q, float* scores) const;

  bool operator==(const LayerSummaries&) const = default;

 private:
  // Quantizes per-block bounds mins/maxs [n_heads][n_blocks][head_dim] into scales_/bounds_.
  void Finish(const std::vector<float>& mins, const std::vector<float>& maxs);

  int layer_ = 0;
  int n_heads_ = 0;
  int head_dim_ = 0;
  int block_tokens_ = 0;
  std::int32_t n_blocks_ = 0;
  std::int64_t n_tokens_ = 0;
  std::vector<float> scales_;        // [n_heads][head_dim]
  std::vector<std::int8_t> bounds_;  // [n_heads][2][head_dim][n_blocks]
};

}  // namespace smartgen::select
