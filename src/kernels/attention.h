// Attention over an arbitrary list of KV blocks, returning the output *and* the log-sum-exp,
// so partial results over disjoint key sets merge exactly (lse_merge.h). This is the kernel
// SmartGen lives in: the decode node attends over the blocks it holds, merges the blocks that
// arrive later, and a layer with every block present is plain dense attention.
//
// One call handles one KV head and the n_q query heads of its GQA group (they share K/V loads).
// Scores are scale * q.k (then softcap * tanh(score / softcap) when softcap > 0, Gemma 2's
// attention soft-capping); masking is causal by position: key position p is attended by a
// query at position qp only if p <= qp, and, with a sliding window (window > 0), only if
// qp - p < window (Gemma's local layers: llama.cpp's LLAMA_SWA_TYPE_STANDARD). All math in
// f32; keys and values are converted from the block dtype on load.
#pragma once

#include <cstdint>
#include <limits>
#include <span>

namespace smartgen::kernels {

enum class KvDType : std::uint8_t { kF32 = 0, kF16 = 1 };
inline constexpr int KvDTypeSize(KvDType t) {
  return t == KvDType::kF32 ? 4 : 2;
}

// A run of cached tokens of one KV head: K and V each [n_tokens][head_dim] in `dtype`,
// contiguous. Positions are first_pos .. first_pos + n_tokens - 1. Borrowed, not owned.
struct KvBlockRef {
  const void* k = nullptr;
  const void* v = nullptr;
  std::int32_t n_tokens = 0;
  std::int64_t first_pos = 0;
};

struct AttentionParams {
  int head_dim = 0;
  int n_q = 1;         // query heads in the group
  float scale = 1.0f;  // usually 1/sqrt(head_dim)
  KvDType dtype = KvDType::kF32;
  int window = 0;         // sliding window in positions; 0 = every earlier position
  float softcap = 0.0f;   // attention logit soft-capping; 0 = none
};

// The first key position a query at q_pos attends under p's window (0 without one).
inline std::int64_t WindowStart(const AttentionParams& p, std::int64_t q_pos) {
  return p.window > 0 && q_pos - p.window + 1 > 0 ? q_pos - p.window + 1 : 0;
}

inline constexpr float kNoKeysLse = -std::numeric_limits<float>::infinity();

// Decode: one token's group queries q[n_q][head_dim] at position q_pos against `blocks`.
// Writes out[n_q][head_dim] and lse[n_q]; keys past q_pos are masked. With no attended key,
// out = 0 and lse = kNoKeysLse.
void AttendBlocks(const AttentionParams& p, const float* q, std::int64_t q_pos,
                  std::span<const KvBlockRef> blocks, float* out, float* lse);
void AttendBlocksReference(const AttentionParams& p, const float* q, std::int64_t q_pos,
                           std::span<const KvBlockRef> blocks, float* out, float* lse);

// Prefill: n_tokens consecutive query tokens at positions first_pos.., causal. Query token t's
// group starts at q + t * q_stride (floats) and its output at out + t * out_stride; lse, when
// not null, is [n_tokens][n_q]. Single-threaded: callers split tokens or heads across threads.
void AttendCausal(const AttentionParams& p, const float* q, std::int64_t q_stride,
                  std::int64_t n_tokens, std::int64_t first_pos, std::span<const KvBlockRef> blocks,
                  float* out, std::int64_t out_stride, float* lse);

}  // namespace smartgen::kernels
