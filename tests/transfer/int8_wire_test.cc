// The int8 wire codec (transfer/int8_wire.h) against a scalar statement of its contract: each
// row decodes to within half its scale of the original, zero rows stay zero, and rows that
// cannot be scaled (non-finite values, a hostile scale) decode to zeros, never to NaN.
#include "transfer/int8_wire.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/fp16.h"

namespace smartgen::transfer {
namespace {

KvGeometry Geometry(KvDType dtype) {
  KvGeometry g;
  g.n_layers = 1;
  g.n_kv_heads = 1;
  g.head_dim = 64;
  g.block_tokens = 16;
  g.dtype = dtype;
  return g;
}

// One block in `dtype` from float values (K then V, block_tokens x head_dim each).
std::vector<std::byte> Native(const KvGeometry& g, const std::vector<float>& values) {
  std::vector<std::byte> out(g.block_bytes());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (g.dtype == KvDType::kF32) {
      std::memcpy(out.data() + 4 * i, &values[i], 4);
    } else if (g.dtype == KvDType::kF16) {
      const auto h = kernels::F32ToF16(values[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    } else {
      const auto h = kernels::F32ToBf16(values[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

float At(const KvGeometry& g, const std::vector<std::byte>& block, std::size_t i) {
  if (g.dtype == KvDType::kF32) {
    float v;
    std::memcpy(&v, block.data() + 4 * i, 4);
    return v;
  }
  std::uint16_t h;
  std::memcpy(&h, block.data() + 2 * i, 2);
  return g.dtype == KvDType::kF16 ? kernels::F16ToF32(h) : kernels::Bf16ToF32(h);
}

std::vector<std::byte> RoundTrip(const KvGeometry& g, const std::vector<std::byte>& native) {
  const std::size_t half = g.half_block_bytes();
  std::vector<std::byte> wire(Int8BlockBytes(g));
  EncodeInt8Block(g, {ConstBytes(native).first(half), ConstBytes(native).subspan(half)}, wire);
  std::vector<std::byte> back(g.block_bytes());
  DecodeInt8Block(g, wire, {MutableBytes(back).first(half), MutableBytes(back).subspan(half), {}});
  return back;
}

TEST(Int8Wire, BlockIsAbout0Point53OfF16) {
  const KvGeometry g = Geometry(KvDType::kF16);
  EXPECT_EQ(Int8BlockBytes(g), 2u * 16 * (4 + 64));
  EXPECT_LT(static_cast<double>(Int8BlockBytes(g)) / g.block_bytes(), 0.54);
  EXPECT_FALSE(CheckInt8Wire(Geometry(KvDType::kI8)).ok());
}

TEST(Int8Wire, EveryRowWithinHalfItsScale) {
  for (KvDType dtype : {KvDType::kF32, KvDType::kF16, KvDType::kBF16}) {
    const KvGeometry g = Geometry(dtype);
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<float> values(2 * g.block_tokens * g.head_dim);
    for (float& v : values) v = normal(rng);
    values[5] = 40.0f;  // an outlier sets its row's scale
    const std::vector<std::byte> native = Native(g, values);
    const std::vector<std::byte> back = RoundTrip(g, native);
    for (std::size_t row = 0; row < 2u * g.block_tokens; ++row) {
      float amax = 0.0f;
      for (std::size_t i = 0; i < g.head_dim; ++i) {
        amax = std::max(amax, std::fabs(At(g, native, row * g.head_dim + i)));
      }
      const float scale = amax / 127.0f;
      for (std::size_t i = 0; i < g.head_dim; ++i) {
        const float x = At(g, native, row * g.head_dim + i);
        const float y = At(g, back, row * g.head_dim + i);
        // Half a step, plus the dtype's own rounding of the decoded value.
        const float tol =
            0.5f * scale * 1.0001f + std::fabs(x) * (dtype == KvDType::kBF16 ? 8e-3f : 1e-3f);
        ASSERT_LE(std::fabs(x - y), tol)
            << "dtype " << DTypeName(dtype) << " row " << row << " i " << i;
      }
    }
  }
}

TEST(Int8Wire, ZeroAndNonFiniteRowsDecodeToZeros) {
  const KvGeometry g = Geometry(KvDType::kF32);
  std::vector<float> values(2 * g.block_tokens * g.head_dim, 0.0f);
  values[g.head_dim + 3] = std::nanf("");  // row 1
  values[2 * g.head_dim] = INFINITY;       // row 2
  values[3 * g.head_dim + 1] = 1.5f;       // row 3: finite
  const std::vector<std::byte> back = RoundTrip(g, Native(g, values));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float y = At(g, back, i);
    ASSERT_TRUE(std::isfinite(y)) << i;
    if (i / g.head_dim != 3) {
      ASSERT_EQ(y, 0.0f) << i;
    }
  }
  EXPECT_NEAR(At(g, back, 3 * g.head_dim + 1), 1.5f, 1.5f / 254);
}

TEST(Int8Wire, HostileScaleDecodesToZeros) {
  const KvGeometry g = Geometry(KvDType::kF16);
  std::vector<std::byte> wire(Int8BlockBytes(g), std::byte{0x7f});
  const float inf = INFINITY;
  std::memcpy(wire.data(), &inf, 4);  // row 0's scale
  std::vector<std::byte> back(g.block_bytes());
  const std::size_t half = g.half_block_bytes();
  DecodeInt8Block(g, wire, {MutableBytes(back).first(half), MutableBytes(back).subspan(half), {}});
  for (std::size_t i = 0; i < g.head_dim; ++i) EXPECT_EQ(At(g, back, i), 0.0f);
  for (std::size_t i = g.head_dim; i < 2u * g.block_tokens * g.head_dim; ++i) {
    ASSERT_TRUE(std::isfinite(At(g, back, i)));
  }
}

}  // namespace
}  // namespace smartgen::transfer
