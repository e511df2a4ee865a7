// KV blocks in int8 on the wire (the approximate copies of the proactive and on-demand paths,
// after KIVI / CacheGen): each row of K and of V (one token of one KV head) is sent as an f32
// scale, max|x| / 127, then head_dim int8 values round(x / scale). A row's error is at most
// scale / 2 per element. Native blocks are K[block_tokens][head_dim] then V in the KV dtype;
// an int8 block is K's rows then V's rows in this format: 2 * block_tokens * (4 + head_dim)
// bytes, 0.53 of an f16 block at head_dim 64.
#pragma once

#include <cstddef>

#include "core/status.h"
#include "transfer/block_io.h"
#include "transfer/types.h"

namespace smartgen::transfer {

// Bytes of one block in int8 on the wire.
std::size_t Int8BlockBytes(const KvGeometry& geometry);
// kInvalidArgument unless the KV dtype is a float type (f32, f16, bf16).
Status CheckInt8Wire(const KvGeometry& geometry);

// Writes `block` (native, geometry.dtype) as Int8BlockBytes(geometry) bytes into `out`.
void EncodeInt8Block(const KvGeometry& geometry, const ConstBlockView& block, MutableBytes out);
// Writes the native form of the int8 block `in` into `out` (k and v, half_block_bytes each).
void DecodeInt8Block(const KvGeometry& geometry, ConstBytes in, const BlockDestination& out);

}  // namespace smartgen::transfer
