// Scalar twins of the Q4_1 / Q5_1 integer-dot decode kernels (kernels::SetFastDot, matmul.h):
// weights x = d q + m times activations quantized to Q8_0 per 32 values (ActQ8, kernel_table.h),
// the formula the AVX-512 VNNI kernels (matmul_avx512vnni_q4_1.cc) evaluate, summed in sequential
// order: y = sum_b (d_b d_x) isum_b + sum_b m_b xsum_b, with isum_b the integer dot of the stored
// q (0..15, or 0..31 with Q5_1's fifth bits) and the activations, xsum_b = sum8_b / 8 = d_x sum(q).
#include <cstdint>
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/kernel_table.h"
#include "kernels/quant_more.h"

namespace smartgen::kernels::internal::scalar {
namespace {

template <typename Block, bool kFive>
void RowsMin(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
             std::int64_t r0, std::int64_t r1) {
  const std::int64_t nb = cols / 32;
  for (std::int64_t r = r0; r < r1; ++r) {
    const auto* blocks =
        reinterpret_cast<const Block*>(static_cast<const std::byte*>(w) + r * row_bytes);
    float sum = 0.0f, mins = 0.0f;
    for (std::int64_t b = 0; b < nb; ++b) {
      const Block& blk = blocks[b];
      std::uint32_t qh = 0;
      if constexpr (kFive) std::memcpy(&qh, blk.qh, 4);
      const std::int8_t* q = x.q + b * 32;
      std::int32_t isum = 0;
      for (int l = 0; l < 16; ++l) {
        const int v0 = (blk.qs[l] & 15) | static_cast<int>(((qh >> l) & 1) << 4);
        const int v1 = (blk.qs[l] >> 4) | static_cast<int>(((qh >> (l + 16)) & 1) << 4);
        isum += v0 * q[l] + v1 * q[l + 16];
      }
      sum += (F16ToF32(blk.d) * x.d[b]) * static_cast<float>(isum);
      mins += F16ToF32(blk.m) * (x.sum8[b] * 0.125f);
    }
    y[r] = sum + mins;
  }
}

}  // namespace

void MatVecQ4_1Act(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x,
                   float* y, std::int64_t r0, std::int64_t r1) {
  RowsMin<BlockQ4_1, false>(w, row_bytes, cols, x, y, r0, r1);
}

void MatVecQ5_1Act(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x,
                   float* y, std::int64_t r0, std::int64_t r1) {
  RowsMin<BlockQ5_1, true>(w, row_bytes, cols, x, y, r0, r1);
}

}  // namespace smartgen::kernels::internal::scalar
