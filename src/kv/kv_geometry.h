// The shape of a model's KV cache and of its blocks (DESIGN.md section 3).
//
// A block is `block_tokens` consecutive tokens of one layer and one KV head: its K rows then
// its V rows, each [block_tokens][head_dim] in `dtype`, contiguous. One block is one copy and
// one transfer unit (4 KiB at head_dim 64, B 16, f16).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/attention.h"

namespace smartgen::kv {

using kernels::KvDType;

struct KvGeometry {
  int n_layers = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int block_tokens = 16;
  KvDType dtype = KvDType::kF16;

  std::size_t row_bytes() const {
    return static_cast<std::size_t>(head_dim) * kernels::KvDTypeSize(dtype);
  }
  // Bytes of K (or V) of one block.
  std::size_t half_block_bytes() const { return row_bytes() * block_tokens; }
  // Bytes of one whole block (K then V).
  std::size_t block_bytes() const { return 2 * half_block_bytes(); }
  // KV bytes per token over all layers and heads (K and V).
  std::size_t bytes_per_token() const {
    return 2 * row_bytes() * static_cast<std::size_t>(n_layers) * n_kv_heads;
  }
  // Blocks needed for n tokens, per (layer, head).
  std::int64_t BlocksFor(std::int64_t n_tokens) const {
    return (n_tokens + block_tokens - 1) / block_tokens;
  }
  bool operator==(const KvGeometry&) const = default;
  std::string ToString() const;
};

}  // namespace smartgen::kv
