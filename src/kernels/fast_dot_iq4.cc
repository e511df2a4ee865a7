// Scalar twins of the IQ4 integer-dot decode kernels (kernels::SetFastDot, matmul.h): IQ4_NL
// and IQ4_XS weights times activations quantized to Q8_0 per 32 values (ActQ8, kernel_table.h),
// the formulas the AVX-512 VNNI kernels (matmul_avx512vnni_iq4.cc) evaluate, summed in
// sequential order. A 32-value block's integer dot of the grid's levels (kIq4nlValues) and the
// activations is scaled in f32 by its weight scale times d_x:
//   IQ4_NL: y = sum_b (d_b d_x) isum_b;
//   IQ4_XS: y = sum_j (d (ls_j - 32) d_x) isum_j over the super-blocks' 8 sub-blocks of 32.
#include <cstdint>

#include "kernels/fp16.h"
#include "kernels/kernel_table.h"
#include "kernels/quant_more.h"

namespace smartgen::kernels::internal::scalar {
namespace {

// Sum of level(q) * activation over a block's 16 nibble bytes (low nibbles elements 0-15,
// high nibbles 16-31).
std::int32_t LevelDot(const std::uint8_t* qs, const std::int8_t* q) {
  std::int32_t isum = 0;
  for (int l = 0; l < 16; ++l) {
    isum += kIq4nlValues[qs[l] & 15] * q[l] + kIq4nlValues[qs[l] >> 4] * q[l + 16];
  }
  return isum;
}

}  // namespace

void MatVecIq4NlAct(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x,
                    float* y, std::int64_t r0, std::int64_t r1) {
  const std::int64_t nb = cols / 32;
  for (std::int64_t r = r0; r < r1; ++r) {
    const auto* blocks =
        reinterpret_cast<const BlockIq4Nl*>(static_cast<const std::byte*>(w) + r * row_bytes);
    float sum = 0.0f;
    for (std::int64_t b = 0; b < nb; ++b) {
      const std::int32_t isum = LevelDot(blocks[b].qs, x.q + b * 32);
      sum += (F16ToF32(blocks[b].d) * x.d[b]) * static_cast<float>(isum);
    }
    y[r] = sum;
  }
}

void MatVecIq4XsAct(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x,
                    float* y, std::int64_t r0, std::int64_t r1) {
  const std::int64_t nsb = cols / 256;
  for (std::int64_t r = r0; r < r1; ++r) {
    const auto* blocks =
        reinterpret_cast<const BlockIq4Xs*>(static_cast<const std::byte*>(w) + r * row_bytes);
    float sum = 0.0f;
    for (std::int64_t b = 0; b < nsb; ++b) {
      const BlockIq4Xs& blk = blocks[b];
      const float d = F16ToF32(blk.d);
      for (int j = 0; j < 8; ++j) {
        const int ls =
            ((blk.scales_l[j / 2] >> (4 * (j % 2))) & 15) | (((blk.scales_h >> (2 * j)) & 3) << 4);
        const std::int64_t a = 8 * b + j;  // activation block
        const std::int32_t isum = LevelDot(blk.qs + 16 * j, x.q + a * 32);
        sum += (d * static_cast<float>(ls - 32) * x.d[a]) * static_cast<float>(isum);
      }
    }
    y[r] = sum;
  }
}

}  // namespace smartgen::kernels::internal::scalar
