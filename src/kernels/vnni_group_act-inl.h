// The activations of the AVX-512 VNNI GEMVs that read 32-value blocks four at a time (Q4_0,
// Q5_0, grouped Q8_0: matmul_avx512vnni.cc; Q4_1, Q5_1: matmul_avx512vnni_q4_1.cc; IQ4_NL,
// IQ4_XS: matmul_avx512vnni_iq4.cc), laid out once per call in the order of the weights'
// nibbles. Include only from those files, which are compiled with -mavx512vnni.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <vector>

#include "kernels/kernel_table.h"

namespace smartgen::kernels::internal::avx512vnni {

inline constexpr int kGroupBlock = 32;  // values per block of a group

// Q4_0, Q5_0, grouped Q8_0 and IQ4: the unsigned values (0..15, 0..31, q + 128, level + 128) are
// the u8 operand and the activations q the s8 one (Q4_1 / Q5_1: their q as stored, kBias 0); the
// offset of kBias (8, 16, 128) per weight enters the integer dot as its initial value -kBias *
// (sum of each lane's 4 activations), so a block's dot is exactly sum((v - kBias) q).
template <int kBias>
inline __m512i OffsetDot(__m512i xq) {
  const __m512i dot =
      _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(static_cast<char>(kBias)), xq);
  return _mm512_sub_epi32(_mm512_setzero_si512(), dot);
}

// A GEMV's activations for these kernels, per group of 4 blocks, in the order of
// the weights' nibbles: lo holds elements 0-15 of each block (16 bytes each, block order), hi
// elements 16-31, so that a group's low and high nibbles dot into the same 4 lanes per block;
// offset is the integer dot's initial value (-kBias times the sum of each lane's activations, see
// OffsetDot) and dx the activation scales, each spread over its block's 4 lanes. Built once per
// GEMV call from the ActQ8, not once per row. A row whose block count is not a multiple of 4
// (SmolLM2-135M's 576 columns: 18 blocks) ends in a part group, whose missing blocks have zero
// activations, offsets and scales here.
struct GroupAct {
  __m512i lo, hi, offset;
  __m512 dx;
};

// The first `bytes` bytes (at most 64) of a load as a mask.
inline __mmask64 FirstBytes(std::int64_t bytes) {
  if (bytes <= 0) return 0;
  return bytes >= 64 ? ~__mmask64{0} : (__mmask64{1} << bytes) - 1;
}

template <int kBias>
inline const GroupAct* PrepareGroups(const ActQ8& x, std::int64_t nb) {
  const std::int64_t groups = (nb + 3) / 4;
  thread_local std::vector<GroupAct> storage;
  if (storage.size() < static_cast<std::size_t>(groups))
    storage.resize(static_cast<std::size_t>(groups));
  const __m512i spread4 = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  for (std::int64_t g = 0; g < groups; ++g) {
    GroupAct& a = storage[static_cast<std::size_t>(g)];
    const std::int64_t left = nb - 4 * g;  // blocks from this group's first on (4 or more: whole)
    const __m512i b01 =
        _mm512_maskz_loadu_epi8(FirstBytes(left * kGroupBlock), x.q + 4 * g * kGroupBlock);
    const __m512i b23 = _mm512_maskz_loadu_epi8(FirstBytes((left - 2) * kGroupBlock),
                                                x.q + (4 * g + 2) * kGroupBlock);
    a.lo = _mm512_shuffle_i64x2(b01, b23, _MM_SHUFFLE(2, 0, 2, 0));
    a.hi = _mm512_shuffle_i64x2(b01, b23, _MM_SHUFFLE(3, 1, 3, 1));
    a.offset = _mm512_add_epi32(OffsetDot<kBias>(a.lo), OffsetDot<kBias>(a.hi));
    const __mmask8 scales = left >= 4 ? 0xF : static_cast<__mmask8>((1u << left) - 1);
    a.dx = _mm512_permutexvar_ps(spread4,
                                 _mm512_castps128_ps512(_mm_maskz_loadu_ps(scales, x.d + 4 * g)));
  }
  return storage.data();
}

}  // namespace smartgen::kernels::internal::avx512vnni
