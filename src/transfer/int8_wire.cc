#include "transfer/int8_wire.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/fp16.h"

namespace smartgen::transfer {
namespace {

float Load(KvDType dtype, const std::byte* row, std::size_t i) {
  switch (dtype) {
    case KvDType::kF32: {
      float v;
      std::memcpy(&v, row + 4 * i, 4);
      return v;
    }
    case KvDType::kF16: {
      kernels::f16_t v;
      std::memcpy(&v, row + 2 * i, 2);
      return kernels::F16ToF32(v);
    }
    case KvDType::kBF16: {
      kernels::bf16_t v;
      std::memcpy(&v, row + 2 * i, 2);
      return kernels::Bf16ToF32(v);
    }
    case KvDType::kI8:
      break;
  }
  return 0.0f;
}

void Store(KvDType dtype, std::byte* row, std::size_t i, float x) {
  switch (dtype) {
    case KvDType::kF32:
      std::memcpy(row + 4 * i, &x, 4);
      break;
    case KvDType::kF16: {
      const kernels::f16_t v = kernels::F32ToF16(x);
      std::memcpy(row + 2 * i, &v, 2);
      break;
    }
    case KvDType::kBF16: {
      const kernels::bf16_t v = kernels::F32ToBf16(x);
      std::memcpy(row + 2 * i, &v, 2);
      break;
    }
    case KvDType::kI8:
      break;
  }
}

std::size_t WireRowBytes(const KvGeometry& g) {
  return 4 + std::size_t{g.head_dim};
}

float MaxScale(KvDType dtype) {
  return (dtype == KvDType::kF16 ? 65504.0f : std::numeric_limits<float>::max()) / 127.0f;
}

// One half (K or V) of a block: block_tokens rows.
void EncodeHalf(const KvGeometry& g, ConstBytes in, std::byte* out) {
  const std::size_t d = g.head_dim, native_row = d * DTypeSize(g.dtype);
  for (std::uint32_t t = 0; t < g.block_tokens; ++t) {
    const std::byte* row = in.data() + t * native_row;
    float amax = 0.0f;
    for (std::size_t i = 0; i < d; ++i) amax = std::max(amax, std::fabs(Load(g.dtype, row, i)));
    // A non-finite row cannot be scaled: it travels as zeros (the exact copy follows).
    const float scale = std::isfinite(amax) && amax > 0.0f ? amax / 127.0f : 0.0f;
    std::memcpy(out, &scale, 4);
    auto* q = reinterpret_cast<std::int8_t*>(out + 4);
    const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
    for (std::size_t i = 0; i < d; ++i) {
      const float v = std::nearbyint(Load(g.dtype, row, i) * inv);
      q[i] = static_cast<std::int8_t>(std::clamp(v, -127.0f, 127.0f));
    }
    out += WireRowBytes(g);
  }
}

void DecodeHalf(const KvGeometry& g, const std::byte* in, MutableBytes out) {
  const std::size_t d = g.head_dim, native_row = d * DTypeSize(g.dtype);
  for (std::uint32_t t = 0; t < g.block_tokens; ++t) {
    float scale;
    std::memcpy(&scale, in, 4);
    // The encoder's scales are finite, non-negative and at most the dtype's largest value / 127:
    // any other (hostile) scale decodes its row to zeros, never to inf or NaN.
    if (!(scale >= 0.0f && scale <= MaxScale(g.dtype))) scale = 0.0f;
    const auto* q = reinterpret_cast<const std::int8_t*>(in + 4);
    std::byte* row = out.data() + t * native_row;
    for (std::size_t i = 0; i < d; ++i) Store(g.dtype, row, i, scale * q[i]);
    in += WireRowBytes(g);
  }
}

}  // namespace

std::size_t Int8BlockBytes(const KvGeometry& g) {
  return 2 * std::size_t{g.block_tokens} * WireRowBytes(g);
}

Status CheckInt8Wire(const KvGeometry& g) {
  if (g.dtype == KvDType::kI8) return InvalidArgument("int8 wire copies need a float KV dtype");
  return Status::Ok();
}

void EncodeInt8Block(const KvGeometry& g, const ConstBlockView& block, MutableBytes out) {
  const std::size_t half = Int8BlockBytes(g) / 2;
  EncodeHalf(g, block.k, out.data());
  EncodeHalf(g, block.v, out.data() + half);
}

void DecodeInt8Block(const KvGeometry& g, ConstBytes in, const BlockDestination& out) {
  const std::size_t half = Int8BlockBytes(g) / 2;
  DecodeHalf(g, in.data(), out.k);
  DecodeHalf(g, in.data() + half, out.v);
}

}  // namespace smartgen::transfer
