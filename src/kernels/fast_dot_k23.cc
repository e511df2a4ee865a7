// Scalar twins of the Q2_K / Q3_K integer-dot decode kernels (kernels::SetFastDot, matmul.h):
// weights times activations quantized to Q8_0 per 32 values (ActQ8, kernel_table.h), the
// formulas the AVX-512 VNNI kernels (matmul_avx512vnni_k23.cc) evaluate, summed in sequential
// order, over sub-blocks k of 16 (activation block a = k / 2):
//   Q2_K: y = sum_k (d (sc_k & 15) d_x) isum_k - sum_k (dmin (sc_k >> 4)) (d_x sum_k(q)),
//         isum_k the integer dot of the 2-bit values (0..3) and the activations;
//   Q3_K: y = sum_k (d (s_k - 32) d_x) isum_k, the values q - 4 !hbit (-4..3).
// Element 128 n + 32 j + l (l < 32) of a super-block: bits 2j of qs[32 n + l], Q3_K's high bit
// bit 4 n + j of hmask[l].
#include <cstdint>

#include "kernels/fp16.h"
#include "kernels/kernel_table.h"
#include "kernels/quant.h"

namespace smartgen::kernels::internal::scalar {
namespace {

template <typename Block, bool kQ3>
void RowsK23(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
             std::int64_t r0, std::int64_t r1) {
  const std::int64_t nsb = cols / kQK_K;
  for (std::int64_t r = r0; r < r1; ++r) {
    const auto* blocks =
        reinterpret_cast<const Block*>(static_cast<const std::byte*>(w) + r * row_bytes);
    float sum = 0.0f, mins = 0.0f;
    for (std::int64_t b = 0; b < nsb; ++b) {
      const Block& blk = blocks[b];
      std::int32_t isum[16] = {}, xsum[16] = {};
      for (int e = 0; e < kQK_K; ++e) {
        const int n = e / 128, j = (e % 128) / 32, l = e % 32;
        int v = (blk.qs[32 * n + l] >> (2 * j)) & 3;
        if constexpr (kQ3) v -= ((blk.hmask[l] >> (4 * n + j)) & 1) ? 0 : 4;
        isum[e / 16] += v * x.q[b * kQK_K + e];
        xsum[e / 16] += x.q[b * kQK_K + e];
      }
      const float d = F16ToF32(blk.d);
      for (int k = 0; k < 16; ++k) {
        const float dx = x.d[8 * b + k / 2];
        if constexpr (kQ3) {
          sum += (static_cast<float>(Q3KScale(blk.scales, k) - 32) * d * dx) *
                 static_cast<float>(isum[k]);
        } else {
          sum += (static_cast<float>(blk.scales[k] & 15) * d * dx) * static_cast<float>(isum[k]);
          mins += (static_cast<float>(blk.scales[k] >> 4) * F16ToF32(blk.dmin)) *
                  (dx * static_cast<float>(xsum[k]));
        }
      }
    }
    y[r] = sum - mins;
  }
}

}  // namespace

void MatVecQ2_KAct(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x,
                   float* y, std::int64_t r0, std::int64_t r1) {
  RowsK23<BlockQ2_K, false>(w, row_bytes, cols, x, y, r0, r1);
}

void MatVecQ3_KAct(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x,
                   float* y, std::int64_t r0, std::int64_t r1) {
  RowsK23<BlockQ3_K, true>(w, row_bytes, cols, x, y, r0, r1);
}

}  // namespace smartgen::kernels::internal::scalar
