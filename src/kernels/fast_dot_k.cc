// Scalar twins of the K-quant integer-dot decode kernels (kernels::SetFastDot, matmul.h): Q4_K,
// Q5_K and Q6_K weights times activations quantized to Q8_0 per 32 values (ActQ8, kernel_table.h),
// the same formulas the AVX-512 VNNI kernels (matmul_avx512vnni_k.cc) evaluate, summed in
// sequential order.
//
// Each 32-value activation block keeps its own scale d_x (finer than ggml's one scale per 256,
// Q8_K), so a sub-block's integer dot is scaled in f32 by (d * sc_j) * d_x:
//   Q4_K: y = sum_j (d sc_j d_x) isum_j - sum_j (dmin m_j) xsum_j, with xsum_j = sum8_j / 8
//         the quantized activations' sum over sub-block j (32 values); Q5_K the same with
//         five-bit values (bit j of qh[l] is the fifth bit of sub-block j's element l);
//   Q6_K: y = sum_j (d sc_j d_x) isum_j over sub-blocks of 16 (q - 32 signed, no offset term).
#include <cstdint>
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/kernel_table.h"
#include "kernels/quant.h"
#include "kernels/quant_more.h"

namespace smartgen::kernels::internal::scalar {

namespace {

// Q4_K (kFive false) or Q5_K rows: both keep d, dmin and the 12 bytes of scales first, the
// nibbles in qs, Q5_K the fifth bits in qh.
template <typename Block, bool kFive>
void RowsQ4KQ5K(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
                std::int64_t r0, std::int64_t r1) {
  const std::int64_t nsb = cols / kQK_K;
  for (std::int64_t r = r0; r < r1; ++r) {
    const auto* blocks =
        reinterpret_cast<const Block*>(static_cast<const std::byte*>(w) + r * row_bytes);
    float sum = 0.0f, mins = 0.0f;
    for (std::int64_t b = 0; b < nsb; ++b) {
      const Block& blk = blocks[b];
      const float d = F16ToF32(blk.d), dmin = F16ToF32(blk.dmin);
      for (int j = 0; j < 8; ++j) {
        std::uint8_t sc, m;
        Q4KScaleMin(j, blk.scales, &sc, &m);
        const std::int64_t a = 8 * b + j;  // activation block
        const std::uint8_t* qs = blk.qs + 32 * (j / 2);
        const std::int8_t* q = x.q + a * 32;
        std::int32_t isum = 0;
        for (int l = 0; l < 32; ++l) {
          int v = (j % 2 == 0) ? (qs[l] & 15) : (qs[l] >> 4);
          if constexpr (kFive) v |= ((blk.qh[l] >> j) & 1) << 4;
          isum += v * q[l];
        }
        sum += (static_cast<float>(sc) * d * x.d[a]) * static_cast<float>(isum);
        mins += (static_cast<float>(m) * dmin) * (x.sum8[a] * 0.125f);
      }
    }
    y[r] = sum - mins;
  }
}

}  // namespace

void MatVecQ4_KAct(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x,
                   float* y, std::int64_t r0, std::int64_t r1) {
  RowsQ4KQ5K<BlockQ4_K, false>(w, row_bytes, cols, x, y, r0, r1);
}

void MatVecQ5_KAct(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x,
                   float* y, std::int64_t r0, std::int64_t r1) {
  RowsQ4KQ5K<BlockQ5_K, true>(w, row_bytes, cols, x, y, r0, r1);
}

void MatVecQ6_KAct(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x,
                   float* y, std::int64_t r0, std::int64_t r1) {
  const std::int64_t nsb = cols / kQK_K;
  for (std::int64_t r = r0; r < r1; ++r) {
    const auto* blocks = reinterpret_cast<const BlockQ6_K*>(static_cast<const std::byte*>(w) + r * row_bytes);
    float sum = 0.0f;
    for (std::int64_t b = 0; b < nsb; ++b) {
      const BlockQ6_K& blk = blocks[b];
      const float d = F16ToF32(blk.d);
      // Element e = 128 n + 32 k + l (half n, quarter k): 4 bits of ql[64 n + 32 (k & 1) + l]
      // (the high nibble when k >= 2), 2 bits of qh[32 n + l] at 2 k; sub-block e / 16.
      std::int32_t isum[16] = {};
      for (int e = 0; e < kQK_K; ++e) {
        const int n = e / 128, k = (e % 128) / 32, l = e % 32;
        const int ql = blk.ql[64 * n + 32 * (k & 1) + l];
        const int qh = blk.qh[32 * n + l];
        const int q = (((k >= 2) ? ql >> 4 : ql & 15) | (((qh >> (2 * k)) & 3) << 4)) - 32;
        isum[e / 16] += q * x.q[b * kQK_K + e];
      }
      for (int j = 0; j < 16; ++j) {
        sum += (static_cast<float>(blk.scales[j]) * d * x.d[8 * b + j / 2]) * static_cast<float>(isum[j]);
      }
    }
    y[r] = sum;
  }
}

}  // namespace smartgen::kernels::internal::scalar
