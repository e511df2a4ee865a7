// Exact attention mass per block: the share of softmax probability that queries put on each
// block of keys. The ground truth the policies are measured against (selection recall), what
// the profile counts (exact top-budget blocks), and the request-specific score of the
// proactive path (SnapKV-style: the mass the last prompt queries put on each block).
//
// Not on the decode hot path (that one scores summaries); this reads every key. The logits of
// all query rows are one GEMM (kernels::MatMul) over the keys in their stored dtype.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/attention.h"

namespace smartgen::select {

// Query rows r = 0..n_rows-1 at positions first_pos + r; row r's group queries are
// q + r * q_stride: [p.n_q][p.head_dim], post-RoPE. Each row attends causally (keys at
// positions <= its own) over the union of `blocks` (disjoint position ranges, any order).
// Writes mass[i] = the probability that falls in blocks[i], averaged over the rows and the
// n_q query heads. The softmax runs over the listed keys only: list every key the rows attend
// to (prompt blocks and generated tail) for the true attention distribution; the masses then
// sum to 1. A row that attends no listed key contributes 0.
// Single-threaded; reentrant (scratch is thread-local).
void BlockAttentionMass(const kernels::AttentionParams& p, const float* q, std::int64_t q_stride,
                        std::int64_t n_rows, std::int64_t first_pos,
                        std::span<const kernels::KvBlockRef> blocks, float* mass);

}  // namespace smartgen::select
