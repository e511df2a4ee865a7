// Q2_K and Q3_K x Q8_0 GEMVs with AVX-512 VNNI (vpdpbusd), behind kernels::SetFastDot
// (matmul.h), on activations prepared once per pass (ActQ8, kernel_table.h). Both keep a
// super-block's 256 two-bit values in 64 qs bytes as four planes: bits 2j..2j+1 of qs[l] are
// element 32 j + l (l < 32) and of qs[32 + l] element 128 + 32 j + l, so one 64-byte load, a
// shift and a mask give plane j's 64 values, dotted in one vpdpbusd with the activations laid
// out once per call in the same order (PlaneAct). Each 4 lanes of a dot are one sub-block of 16,
// scaled by its d sc_k d_x in one FMA per plane; no widening to f32. Q2_K: x = d (sc & 15) q -
// dmin (sc >> 4), the mins taken against each sub-block's d_x sum(q), 16 per FMA; Q3_K: x =
// d (s - 32) (q - 4 !hbit), the high bit (bit 4 n + j of hmask[l]) added as 4 under a byte mask
// and the offset of 4 the dot's initial value. Twins: scalar::MatVecQ2_KAct, MatVecQ3_KAct
// (fast_dot_k23.cc). Compiled with -mavx512vnni; chosen only when the CPU has it
// (FastDotActKernel).
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/kquant_scales-inl.h"
#include "kernels/row_streams.h"

namespace smartgen::kernels::internal::avx512vnni {
namespace {

constexpr int kQK = 256;
constexpr int kQ2KBytes = 84;   // scales[16], qs[64], f16 d, f16 dmin
constexpr int kQ3KBytes = 110;  // hmask[32], qs[64], scales[12], f16 d

float HalfAt(const std::byte* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Plane j of super-block b: the activations of elements 32 j .. 32 j + 31 (bytes 0-31) and
// 128 + 32 j .. 128 + 32 j + 31 (bytes 32-63), and off4, -4 times each lane's sum (Q3_K's
// offset). Per super-block, by sub-block k (elements 16 k .. 16 k + 15): dx16 the d_x of its
// activation block, sums16 d_x sum(q) (Q2_K's mins).
struct PlaneAct {
  __m512i q, off4;
};
struct SuperAct {
  __m512 dx16, sums16;
};

void PrepareK23(const ActQ8& x, std::int64_t nsb, const PlaneAct** planes,
                const SuperAct** supers) {
  thread_local std::vector<PlaneAct> plane_storage;
  thread_local std::vector<SuperAct> super_storage;
  if (plane_storage.size() < static_cast<std::size_t>(4 * nsb))
    plane_storage.resize(static_cast<std::size_t>(4 * nsb));
  if (super_storage.size() < static_cast<std::size_t>(nsb))
    super_storage.resize(static_cast<std::size_t>(nsb));
  const __m512i pairs = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
  for (std::int64_t b = 0; b < nsb; ++b) {
    const std::int8_t* q = x.q + b * kQK;
    for (int j = 0; j < 4; ++j) {
      PlaneAct& p = plane_storage[static_cast<std::size_t>(4 * b + j)];
      p.q = _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * j))),
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 128 + 32 * j)), 1);
      p.off4 =
          _mm512_sub_epi32(_mm512_setzero_si512(),
                           _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(4), p.q));
    }
    SuperAct& s = super_storage[static_cast<std::size_t>(b)];
    s.dx16 = _mm512_permutexvar_ps(pairs, _mm512_castps256_ps512(_mm256_loadu_ps(x.d + 8 * b)));
    alignas(64) float sums[16];
    for (int k = 0; k < 16; ++k) {
      std::int32_t sum = 0;
      for (int l = 0; l < 16; ++l) sum += q[16 * k + l];
      sums[k] = static_cast<float>(sum);
    }
    s.sums16 = _mm512_mul_ps(s.dx16, _mm512_load_ps(sums));
  }
  *planes = plane_storage.data();
  *supers = super_storage.data();
}

// Lanes of plane j's dot by sub-block: 2j, 2j + 1, 8 + 2j, 9 + 2j, 4 lanes each.
__m512i PickPlane(int j) {
  return _mm512_set_epi32(9 + 2 * j, 9 + 2 * j, 9 + 2 * j, 9 + 2 * j, 8 + 2 * j, 8 + 2 * j,
                          8 + 2 * j, 8 + 2 * j, 2 * j + 1, 2 * j + 1, 2 * j + 1, 2 * j + 1, 2 * j,
                          2 * j, 2 * j, 2 * j);
}

template <bool kQ3>
float RowK23(const std::byte* w, std::int64_t nsb, const PlaneAct* planes, const SuperAct* supers,
             std::size_t ahead) {
  constexpr int kBytes = kQ3 ? kQ3KBytes : kQ2KBytes;
  const __m512i three = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
  __m512i pick[4], high_bit[4];
  for (int j = 0; j < 4; ++j) {
    pick[j] = PickPlane(j);
    high_bit[j] = _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << j)),
                                     _mm256_set1_epi8(static_cast<char>(1 << (4 + j))), 1);
  }
  __m512 acc = _mm512_setzero_ps(), mins = _mm512_setzero_ps();
  for (std::int64_t b = 0; b < nsb; ++b) {
    const std::byte* blk = w + b * kBytes;
    for (int off = 0; off < kBytes; off += 64) __builtin_prefetch(blk + ahead + off, 0, 3);
    __m512 s16;  // d sc_k per sub-block k, then times its d_x
    __m512i hmask = _mm512_setzero_si512();
    const PlaneAct* pa = planes + 4 * b;
    if constexpr (kQ3) {
      s16 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(Q3Scales(blk + 96))),
                          _mm512_set1_ps(HalfAt(blk + 108)));
      hmask = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
    } else {
      const __m512i sc =
          _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk)));
      s16 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_and_si512(sc, _mm512_set1_epi32(15))),
                          _mm512_set1_ps(HalfAt(blk + 80)));
      const __m512 m16 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(sc, 4)),
                                       _mm512_set1_ps(HalfAt(blk + 82)));
      mins = _mm512_fmadd_ps(m16, supers[b].sums16, mins);
    }
    s16 = _mm512_mul_ps(s16, supers[b].dx16);
    const __m512i qs = _mm512_loadu_si512(blk + (kQ3 ? 32 : 16));
    for (int j = 0; j < 4; ++j) {
      __m512i u = _mm512_and_si512(_mm512_srli_epi16(qs, 2 * j), three);
      __m512i init = _mm512_setzero_si512();
      if constexpr (kQ3) {
        // Values 0..3: or-ing the high bit in is adding 4; the offset makes them q - 4 !hbit.
        u = _mm512_mask_add_epi8(u, _mm512_test_epi8_mask(hmask, high_bit[j]), u, four);
        init = pa[j].off4;
      }
      const __m512i dot = _mm512_dpbusd_epi32(init, u, pa[j].q);
      acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_permutexvar_ps(pick[j], s16), acc);
    }
  }
  return _mm512_reduce_add_ps(acc) - _mm512_reduce_add_ps(mins);
}

template <bool kQ3>
void MatVecK23(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
               std::int64_t r0, std::int64_t r1) {
  const std::int64_t nsb = cols / kQK;
  const PlaneAct* planes = nullptr;
  const SuperAct* supers = nullptr;
  PrepareK23(x, nsb, &planes, &supers);
  GemvRows(w, row_bytes, y, r0, r1, [&](const std::byte* row, std::size_t ahead) {
    return RowK23<kQ3>(row, nsb, planes, supers, ahead);
  });
}

}  // namespace

void MatVecQ2_K(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
                std::int64_t r0, std::int64_t r1) {
  MatVecK23<false>(w, row_bytes, cols, x, y, r0, r1);
}

void MatVecQ3_K(const void* w, std::size_t row_bytes, std::int64_t cols, const ActQ8& x, float* y,
                std::int64_t r0, std::int64_t r1) {
  MatVecK23<true>(w, row_bytes, cols, x, y, r0, r1);
}

}  // namespace smartgen::kernels::internal::avx512vnni
