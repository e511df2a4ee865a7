// Decode batches of Q4_0, Q5_0, Q4_K, Q5_K and Q6_K weights (Q4_1, Q5_1, Q2_K, Q3_K:
// avx2_batch_kinds_more-inl.h) with AVX2 integer dots, behind
// kernels::SetFastDot (matmul.h), for CPUs without AVX-512 VNNI: the panel scheme of the VNNI
// batched kernels (matmul_avx512vnni_batch.cc) at 8 tokens per 256-bit register. A row's unit (a
// super-block, or 8 blocks of 32) is unpacked once into bytes (values 0..15, 0..31, 0..63) and
// scales; then each 4 values, broadcast, meet 8 tokens' 4 activations of the panel (ActPanel,
// kernel_table.h) in one vpmaddubsw. The s16 pair sums add up in 16 bits for as many groups as
// cannot overflow (kSum16Groups: |pair| <= 2 * max value * 127), then one vpmaddwd by ones widens
// them: a token costs about two instructions per 4 weights instead of the single-token kernels'
// six per 32-value block plus unpacking. Q4_0 / Q5_0 / Q6_K's values carry +8 / +16 / +32, taken
// off as -8 (-16) sum(q) per block (nsum) or -32 sum(q) per half-block (nsum16); Q4_K / Q5_K's
// mins as m d_x sum(q) per block (xsum). Equal to the single-token kernels and the scalar twins
// up to the order of the f32 sums. Compiled with -mavx2 -mfma -mf16c; chosen for the AVX2 table
// (FastDotBatchKernel).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/avx2_intdot-inl.h"
#include "kernels/kernel_table.h"
#include "kernels/kquant_scales-inl.h"

namespace smartgen::kernels::internal::avx2 {
namespace {

// A row's unit: up to 256 values in element order, per-block (Q6_K: per half-block) scales d sc
// and mins dmin m.
struct Unpacked {
  alignas(32) std::uint8_t v[256];
  float s[16];
  float m[16];  // per block; Q2_K per half-block
};

void UnpackQ4KScales(const std::byte* blk, Unpacked* u) {
  const __m128i sm = ScalesMinsQ4K(blk + 4);
  _mm256_storeu_ps(u->s, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sm)),
                                       _mm256_set1_ps(HalfAt(blk))));
  _mm256_storeu_ps(u->m,
                   _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(sm, 8))),
                                 _mm256_set1_ps(HalfAt(blk + 2))));
}

// Per kind: kSuper (a unit is one 256-value super-block of kBlockBytes; else up to 8 blocks of
// kBlockBytes), the offset shift (values carry +(1 << kShift), taken off as -(1 << kShift) sum(q)
// per block; -1: none), half-block scales (Q6_K), mins (Q4_K, Q5_K), and Unpack(unit, blocks, out).
// A Q4_0 / Q4_1 block's 32 nibbles in element order at 0..15, or with kFive (Q5_0 / Q5_1) the
// fifth bits of the 4 bytes at qh_at added as 16 (0..31).
template <bool kFive>
__m256i NibbleValues(const std::byte* blk, int qs_at, int qh_at) {
  __m256i v = Nibbles(blk + qs_at);
  if constexpr (kFive) {
    std::uint32_t qh;
    std::memcpy(&qh, blk + qh_at, 4);
    v = _mm256_or_si256(v, HighBits16(qh));
  }
  return v;
}

template <bool kFive>
struct KindQ4_0Q5_0 {
  static constexpr bool kSuper = false;
  static constexpr int kBlockBytes = kFive ? 22 : 18, kShift = kFive ? 4 : 3;
  static constexpr bool kHalves = false, kMins = false;
  static constexpr int kSum16Groups = kFive ? 4 : 8;
  static void Unpack(const std::byte* unit, int nbu, Unpacked* u) {
    for (int j = 0; j < nbu; ++j) {
      const std::byte* blk = unit + j * kBlockBytes;  // d, [qh[4]], qs[16]
      _mm256_store_si256(reinterpret_cast<__m256i*>(u->v + 32 * j),
                         NibbleValues<kFive>(blk, kFive ? 6 : 2, 2));
      u->s[j] = HalfAt(blk);
    }
  }
};

template <bool kFive>
struct KindQ4K5K {
  static constexpr bool kSuper = true;
  static constexpr int kBlockBytes = kFive ? 176 : 144, kShift = -1;
  static constexpr bool kHalves = false, kMins = true;
  static constexpr int kSum16Groups = kFive ? 4 : 8;  // 2 * 31 * 127 * 4, 2 * 15 * 127 * 8 < 32768
  static void Unpack(const std::byte* blk, int /*nbu: 8*/, Unpacked* u) {
    constexpr int kQs = kFive ? 48 : 16;
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256i qh = _mm256_setzero_si256();
    if constexpr (kFive) qh = Load32(blk + 16);
    for (int g = 0; g < 4; ++g) {
      const __m256i qs = Load32(blk + kQs + 32 * g);
      __m256i lo = _mm256_and_si256(qs, low4),
              hi = _mm256_and_si256(_mm256_srli_epi16(qs, 4), low4);
      if constexpr (kFive) {
        lo = _mm256_or_si256(lo, ByteBit(qh, 2 * g, 4));
        hi = _mm256_or_si256(hi, ByteBit(qh, 2 * g + 1, 4));
      }
      _mm256_store_si256(reinterpret_cast<__m256i*>(u->v + 64 * g), lo);
      _mm256_store_si256(reinterpret_cast<__m256i*>(u->v + 64 * g + 32), hi);
    }
    UnpackQ4KScales(blk, u);
  }
};

struct KindQ6K {
  static constexpr bool kSuper = true;
  static constexpr int kBlockBytes = 210, kShift = 5;
  static constexpr bool kHalves = true, kMins = false;
  static constexpr int kSum16Groups = 2;  // 2 * 63 * 127 * 2 < 32768
  static void Unpack(const std::byte* blk, int /*nbu: 8*/, Unpacked* u) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), three = _mm256_set1_epi8(3);
    for (int n = 0; n < 2; ++n) {
      const __m256i ql0 = Load32(blk + 64 * n), ql1 = Load32(blk + 64 * n + 32);
      const __m256i qh = Load32(blk + 128 + 32 * n);
      for (int k = 0; k < 4; ++k) {  // elements 128 n + 32 k + l
        const __m256i ql = (k & 1) ? ql1 : ql0;
        const __m256i lo = _mm256_and_si256(k >= 2 ? _mm256_srli_epi16(ql, 4) : ql, low4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), three);
        _mm256_store_si256(reinterpret_cast<__m256i*>(u->v + 128 * n + 32 * k),
                           _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)));
      }
    }
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192));
    const __m256 d = _mm256_set1_ps(HalfAt(blk + 208));
    _mm256_storeu_ps(u->s, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc)), d));
    _mm256_storeu_ps(
        u->s + 8,
        _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8))), d));
  }
};

#define SMARTGEN_AVX2_BATCH_KINDS
#include "kernels/avx2_batch_kinds_more-inl.h"  // inside this namespace
#undef SMARTGEN_AVX2_BATCH_KINDS

__m256i Broadcast4(const std::uint8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// The integer dots of R rows' values (u[i].v + off, kGroups groups of 4) with 8 tokens' groups
// (`panel`, 64 bytes a group, this half's 32 at its start), each started at `init`.
template <class Kind, int R, int kGroups>
inline void Dots(const Unpacked* u, int off, const std::int8_t* panel, __m256i init, __m256i* dot) {
  const __m256i ones = _mm256_set1_epi16(1);
  for (int i = 0; i < R; ++i) dot[i] = init;
  for (int k0 = 0; k0 < kGroups; k0 += Kind::kSum16Groups) {
    __m256i s16[R];
    for (int i = 0; i < R; ++i) s16[i] = _mm256_setzero_si256();
    for (int k = k0; k < k0 + Kind::kSum16Groups; ++k) {
      const __m256i p = Load32(panel + 64 * k);
      for (int i = 0; i < R; ++i)
        s16[i] =
            _mm256_add_epi16(s16[i], _mm256_maddubs_epi16(Broadcast4(u[i].v + off + 4 * k), p));
    }
    for (int i = 0; i < R; ++i) dot[i] = _mm256_add_epi32(dot[i], _mm256_madd_epi16(s16[i], ones));
  }
}

// -(1 << kShift) sum(q) of this half's 8 tokens, from -sum(q) (nsum), or zero.
template <int kShift>
__m256i Offset(const std::int32_t* nsum) {
  if constexpr (kShift < 0) {
    return _mm256_setzero_si256();
  } else {
    return _mm256_slli_epi32(Load32(nsum), kShift);
  }
}

// R rows x 8 tokens (half th of the panel): out[i] lane t = token 8 th + t.
template <class Kind, int R>
void RowsBatch(const std::byte* w, std::size_t row_bytes, std::int64_t nb, const ActPanel& x,
               int th, __m256* out) {
  // Per half-block mins (Q2_K) apart, as the scalar twin sums them: they nearly cancel the dots.
  __m256 acc[R], mins[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm256_setzero_ps(), mins[i] = _mm256_setzero_ps();
  Unpacked u[R];
  for (std::int64_t b0 = 0; b0 < nb; b0 += 8) {
    const int nbu = static_cast<int>(nb - b0 < 8 ? nb - b0 : 8);  // a super-block: always 8
    const std::int64_t first = Kind::kSuper ? b0 / 8 * Kind::kBlockBytes : b0 * Kind::kBlockBytes;
    const int bytes = Kind::kSuper ? Kind::kBlockBytes : nbu * Kind::kBlockBytes;
    for (int i = 0; i < R; ++i) {
      const std::byte* unit = w + i * row_bytes + first;
      for (int off = 0; off < bytes; off += 64)
        __builtin_prefetch(unit + kPrefetchRows * row_bytes + off, 0, 3);
      Kind::Unpack(unit, nbu, &u[i]);
    }
    for (int j = 0; j < nbu; ++j) {
      const std::int64_t b = b0 + j;
      const std::int8_t* panel = x.q + b * 512 + 32 * th;
      const __m256 dx = _mm256_load_ps(x.d + b * 16 + 8 * th);
      __m256i dot[R];
      if constexpr (Kind::kHalves) {
        for (int h = 0; h < 2; ++h) {
          const __m256i init = Offset<Kind::kShift>(x.nsum16 + (2 * b + h) * 16 + 8 * th);
          Dots<Kind, R, 4>(u, 32 * j + 16 * h, panel + 256 * h, init, dot);
          for (int i = 0; i < R; ++i) {
            acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[i]),
                                     _mm256_mul_ps(_mm256_set1_ps(u[i].s[2 * j + h]), dx), acc[i]);
          }
          if constexpr (Kind::kMins) {
            // nsum16 = -sum(q) of the half-block: adding m d_x nsum16 subtracts m d_x sum(q).
            const __m256 xs =
                _mm256_mul_ps(dx, _mm256_cvtepi32_ps(Load32(x.nsum16 + (2 * b + h) * 16 + 8 * th)));
            for (int i = 0; i < R; ++i)
              mins[i] = _mm256_fmadd_ps(_mm256_set1_ps(u[i].m[2 * j + h]), xs, mins[i]);
          }
        }
      } else {
        Dots<Kind, R, 8>(u, 32 * j, panel, Offset<Kind::kShift>(x.nsum + b * 16 + 8 * th), dot);
        for (int i = 0; i < R; ++i) {
          acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[i]),
                                   _mm256_mul_ps(_mm256_set1_ps(u[i].s[j]), dx), acc[i]);
        }
        if constexpr (Kind::kMins) {
          const __m256 xs = _mm256_load_ps(x.xsum + b * 16 + 8 * th);
          for (int i = 0; i < R; ++i)
            acc[i] = _mm256_fnmadd_ps(_mm256_set1_ps(u[i].m[j]), xs, acc[i]);
        }
      }
    }
  }
  for (int i = 0; i < R; ++i) out[i] = _mm256_add_ps(acc[i], mins[i]);
}

template <class Kind>
void Batch(const void* w, std::size_t row_bytes, std::int64_t cols, const ActPanel& x, float* y,
           std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  constexpr int kR = 2;
  const std::int64_t nb = cols / 32;
  const auto* base = static_cast<const std::byte*>(w);
  alignas(32) float tmp[kR][8];
  for (int th = 0; 8 * th < x.n; ++th) {
    const int nt = x.n - 8 * th < 8 ? x.n - 8 * th : 8;
    for (std::int64_t r = r0; r < r1; r += kR) {
      __m256 out[kR];
      const int rows = static_cast<int>(r1 - r < kR ? r1 - r : kR);
      if (rows == kR) {
        RowsBatch<Kind, kR>(base + r * row_bytes, row_bytes, nb, x, th, out);
      } else {
        for (int i = 0; i < rows; ++i)
          RowsBatch<Kind, 1>(base + (r + i) * row_bytes, row_bytes, nb, x, th, out + i);
      }
      for (int i = 0; i < rows; ++i) _mm256_store_ps(tmp[i], out[i]);
      for (int t = 0; t < nt; ++t) {
        for (int i = 0; i < rows; ++i) y[(8 * th + t) * ldy + r + i] = tmp[i][t];
      }
    }
  }
}

}  // namespace

void MatMulQ4_0(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindQ4_0Q5_0<false>>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulQ5_0(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindQ4_0Q5_0<true>>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulQ4_K(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindQ4K5K<false>>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulQ5_K(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindQ4K5K<true>>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulQ6_K(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindQ6K>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulQ4_1(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindMin<false>>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulQ5_1(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindMin<true>>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulQ2_K(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindQ2_K>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulQ3_K(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindQ3_K>(w, rb, cols, x, y, ldy, r0, r1);
}

}  // namespace smartgen::kernels::internal::avx2
