// Decode batches with AVX-512 VNNI: every quantized type's weights (Q8_0, Q4_0, Q5_0, Q4_K, Q6_K
// here; Q4_1, Q5_1, Q2_K, Q3_K, Q5_K, IQ4_NL, IQ4_XS in vnni_batch_kinds_more-inl.h) times the Q8_0
// activations of up to 16 tokens at once (ActPanel, kernel_table.h): each of the 16 int32 lanes
// of a vpdpbusd is one token. A weight row is unpacked once per panel
// into its unsigned values (2- to 6-bit values, IQ4 levels or Q8_0 plus 128), 4 of them broadcast
// to every lane and multiplied by the 4 matching activations of each token: a 32-value block is 8
// vpdpbusd for all 16 tokens, then one FMA by (d_w * d_x) per token lane. The unsigned values'
// offsets (4, 8, 16, 32, 128 per weight) enter the integer dot as its initial value, offset times
// the panel's negated activation sums; mins (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K) are subtracted times
// the tokens' block or half-block sums. The same integer dots as the single-token kernels
// (matmul_avx512vnni*.cc) and their scalar twins, summed in another order. Compiled with -mavx512vnni; chosen only when the CPU has it (FastDotBatchKernel).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/kernel_table.h"
#include "kernels/kquant_scales-inl.h"
#include "kernels/q5_0_groups.h"
#include "kernels/q8_0_groups.h"
#include "kernels/quant_more.h"

namespace smartgen::kernels::internal::avx512vnni {
namespace {

constexpr int kPrefetchRows = 12;  // as the other GEMVs

float HalfAt(const std::byte* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// A row's values for up to 8 blocks of 32 (one K-quant super-block), in element order.
struct Unpacked {
  alignas(64) std::uint8_t v[256];
  float s[16];  // per block (per half-block of 16 when the kind has kHalves)
  float m[16];  // mins (kMins): subtracted times the token's sum over block j (half-block k)
};

// Per kind: the bytes of an unpack unit of kUnit 32-value blocks (kSuper: one K-quant
// super-block; else kUnit blocks of kBlockBytes), the offset shift (offset = 1 << kShift, or
// none), half-block scales (Q6_K), mins (Q4_K), and Unpack(row, first block, blocks, out).
struct KindQ4_0 {
  static constexpr bool kSuper = false;
  static constexpr int kBlockBytes = 18, kUnit = 8, kShift = 3;
  static constexpr bool kHalves = false, kMins = false;
  static void Unpack(const std::byte* row, std::int64_t b0, int nbu, Unpacked* u) {
    const __m128i low4 = _mm_set1_epi8(0x0F);
    for (int j = 0; j < nbu; ++j) {
      const std::byte* blk = row + (b0 + j) * kBlockBytes;
      const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
      _mm_store_si128(reinterpret_cast<__m128i*>(u->v + 32 * j), _mm_and_si128(qs, low4));
      _mm_store_si128(reinterpret_cast<__m128i*>(u->v + 32 * j + 16), _mm_and_si128(_mm_srli_epi16(qs, 4), low4));
      u->s[j] = HalfAt(blk);
    }
  }
};

// One Q5_0 block as in the file into block j of u.
void UnpackQ5_0Block(const std::byte* blk, int j, Unpacked* u) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), sixteen = _mm256_set1_epi8(16);
  const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 6));
  const __m256i v = _mm256_and_si256(
      _mm256_inserti128_si256(_mm256_castsi128_si256(qs), _mm_srli_epi16(qs, 4), 1), low4);
  std::uint32_t qh;
  std::memcpy(&qh, blk + 2, 4);
  _mm256_store_si256(reinterpret_cast<__m256i*>(u->v + 32 * j), _mm256_mask_add_epi8(v, qh, v, sixteen));
  u->s[j] = HalfAt(blk);
}

struct KindQ5_0 {
  static constexpr bool kSuper = false;
  static constexpr int kBlockBytes = 22, kUnit = 8, kShift = 4;
  static constexpr bool kHalves = false, kMins = false;
  static void Unpack(const std::byte* row, std::int64_t b0, int nbu, Unpacked* u) {
    for (int j = 0; j < nbu; ++j) UnpackQ5_0Block(row + (b0 + j) * kBlockBytes, j, u);
  }
};

// Q5_0 rows regrouped for the VNNI GEMV (q5_0_groups.h): the same values from the grouped
// layout. A unit of 8 blocks is two whole groups unless it is a row's last and short: then its
// blocks past the last whole group are the part group.
struct KindQ5_0Groups {
  static constexpr bool kSuper = false;
  static constexpr int kBlockBytes = 22, kUnit = 8, kShift = 4;
  static constexpr bool kHalves = false, kMins = false;
  static void Unpack(const std::byte* row, std::int64_t b0, int nbu, Unpacked* u) {
    const __m512i low4 = _mm512_set1_epi8(0x0F), sixteen = _mm512_set1_epi8(16);
    // Block k's elements 0-15 are lane k of lo, 16-31 lane k of hi: blocks 0-1 and 2-3 in order.
    const __m512i first = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
    const __m512i second = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
    const int whole = nbu / 4;
    for (int g = 0; g < whole; ++g) {
      const std::byte* group = row + (b0 / 4 + g) * (4 * kBlockBytes);
      const __m512i n4 = _mm512_loadu_si512(group);
      std::uint64_t qh_lo, qh_hi;
      std::memcpy(&qh_lo, group + 64, 8);
      std::memcpy(&qh_hi, group + 72, 8);
      __m512i lo = _mm512_and_si512(n4, low4);
      __m512i hi = _mm512_and_si512(_mm512_srli_epi16(n4, 4), low4);
      lo = _mm512_mask_add_epi8(lo, _cvtu64_mask64(qh_lo), lo, sixteen);
      hi = _mm512_mask_add_epi8(hi, _cvtu64_mask64(qh_hi), hi, sixteen);
      _mm512_store_si512(u->v + 128 * g, _mm512_permutex2var_epi64(lo, first, hi));
      _mm512_store_si512(u->v + 128 * g + 64, _mm512_permutex2var_epi64(lo, second, hi));
      _mm_storeu_ps(u->s + 4 * g, _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(group + 80))));
    }
    // The part group (a row's last n < 4 blocks: nibbles, qh low halves, qh high halves, scales,
    // n of each), block by block through the file's layout.
    const int n = nbu - 4 * whole;
    const std::byte* part = row + (b0 + 4 * whole) * kBlockBytes;
    for (int k = 0; k < n; ++k) {
      std::byte blk[kBlockBytes];
      std::memcpy(blk, part + 20 * n + 2 * k, 2);
      std::memcpy(blk + 2, part + 16 * n + 2 * k, 2);
      std::memcpy(blk + 4, part + 18 * n + 2 * k, 2);
      std::memcpy(blk + 6, part + 16 * k, 16);
      UnpackQ5_0Block(blk, 4 * whole + k, u);
    }
  }
};

struct KindQ8_0 {
  static constexpr bool kSuper = false;
  static constexpr int kBlockBytes = 34, kUnit = 8, kShift = 7;
  static constexpr bool kHalves = false, kMins = false;
  static void Unpack(const std::byte* row, std::int64_t b0, int nbu, Unpacked* u) {
    const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
    for (int j = 0; j < nbu; ++j) {
      const std::byte* blk = row + (b0 + j) * kBlockBytes;
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
      _mm256_store_si256(reinterpret_cast<__m256i*>(u->v + 32 * j), _mm256_xor_si256(q, bias));  // q + 128
      u->s[j] = HalfAt(blk);
    }
  }
};

// Q8_0 rows regrouped for the VNNI GEMV (q8_0_groups.h): the same values (q + 128) from the
// grouped layout; a short last unit's blocks past the last whole group are the part group.
struct KindQ8_0Groups {
  static constexpr bool kSuper = false;
  static constexpr int kBlockBytes = 34, kUnit = 8, kShift = 7;
  static constexpr bool kHalves = false, kMins = false;
  static void Unpack(const std::byte* row, std::int64_t b0, int nbu, Unpacked* u) {
    // Block k's elements 0-15 are lane k of lo, 16-31 lane k of hi: blocks 0-1 and 2-3 in order.
    const __m512i first = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
    const __m512i second = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
    const int whole = nbu / 4;
    for (int g = 0; g < whole; ++g) {
      const std::byte* group = row + (b0 / 4 + g) * (4 * kBlockBytes);
      const __m512i lo = _mm512_loadu_si512(group), hi = _mm512_loadu_si512(group + 64);
      _mm512_store_si512(u->v + 128 * g, _mm512_permutex2var_epi64(lo, first, hi));
      _mm512_store_si512(u->v + 128 * g + 64, _mm512_permutex2var_epi64(lo, second, hi));
      _mm_storeu_ps(u->s + 4 * g,
                    _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(group + 128))));
    }
    // The part group (a row's last n < 4 blocks: elements 0-15 of each, 16-31 of each, scales).
    const int n = nbu - 4 * whole;
    const std::byte* part = row + (b0 + 4 * whole) * kBlockBytes;
    for (int k = 0; k < n; ++k) {
      const int j = 4 * whole + k;
      std::memcpy(u->v + 32 * j, part + 16 * k, 16);
      std::memcpy(u->v + 32 * j + 16, part + 16 * n + 16 * k, 16);
      u->s[j] = HalfAt(part + 32 * n + 2 * k);
    }
  }
};

// A Q4_K / Q5_K block's 8 scales d sc_j and mins dmin m_j into u.
void UnpackQ4KScales(const std::byte* blk, Unpacked* u) {
  const __m512 f = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(ScalesMinsQ4K(blk + 4)));
  const __m512 dd =
      _mm512_insertf32x8(_mm512_set1_ps(HalfAt(blk)), _mm256_set1_ps(HalfAt(blk + 2)), 1);
  alignas(64) float sm[16];
  _mm512_store_ps(sm, _mm512_mul_ps(f, dd));
  for (int j = 0; j < 8; ++j) u->s[j] = sm[j], u->m[j] = sm[8 + j];
}

struct KindQ4_K {
  static constexpr bool kSuper = true;
  static constexpr int kBlockBytes = 144, kUnit = 8, kShift = -1;
  static constexpr bool kHalves = false, kMins = true;
  static void Unpack(const std::byte* row, std::int64_t b0, int /*nbu: 8*/, Unpacked* u) {
    const std::byte* blk = row + (b0 / 8) * kBlockBytes;
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (int g = 0; g < 4; ++g) {
      const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16 + 32 * g));
      _mm256_store_si256(reinterpret_cast<__m256i*>(u->v + 64 * g), _mm256_and_si256(qs, low4));
      _mm256_store_si256(reinterpret_cast<__m256i*>(u->v + 64 * g + 32),
                         _mm256_and_si256(_mm256_srli_epi16(qs, 4), low4));
    }
    UnpackQ4KScales(blk, u);
  }
};

struct KindQ6_K {
  static constexpr bool kSuper = true;
  static constexpr int kBlockBytes = 210, kUnit = 8, kShift = 5;
  static constexpr bool kHalves = true, kMins = false;
  static void Unpack(const std::byte* row, std::int64_t b0, int /*nbu: 8*/, Unpacked* u) {
    const std::byte* blk = row + (b0 / 8) * kBlockBytes;
    const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
    for (int n = 0; n < 2; ++n) {
      const __m512i ql = _mm512_loadu_si512(blk + 64 * n);
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 128 + 32 * n));
      const __m512i qhh = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
      _mm512_store_si512(u->v + 128 * n, _mm512_or_si512(_mm512_and_si512(ql, low4),
                                                         _mm512_and_si512(_mm512_slli_epi16(qhh, 4), bits45)));
      _mm512_store_si512(u->v + 128 * n + 64, _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                                                              _mm512_and_si512(qhh, bits45)));
    }
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192));
    _mm512_storeu_ps(u->s, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sc)), _mm512_set1_ps(HalfAt(blk + 208))));
  }
};

#define SMARTGEN_VNNI_BATCH_KINDS
#include "kernels/vnni_batch_kinds_more-inl.h"  // inside this namespace
#undef SMARTGEN_VNNI_BATCH_KINDS

__m512i Broadcast4(const std::uint8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// The integer dots of R rows' values (u[i].v + 32 j + 16 h, kGroups groups of 4) with the panel's
// 16 tokens (groups from `panel`), each started at `init`.
template <int R, int kGroups>
inline void Dots(const Unpacked* u, int off, const __m512i* panel, __m512i init, __m512i* dot) {
  for (int i = 0; i < R; ++i) dot[i] = init;
  for (int k = 0; k < kGroups; ++k) {
    const __m512i p = _mm512_load_si512(panel + k);
    for (int i = 0; i < R; ++i) dot[i] = _mm512_dpbusd_epi32(dot[i], Broadcast4(u[i].v + off + 4 * k), p);
  }
}

template <int kShift>
__m512i Offset(const std::int32_t* nsum) {
  if constexpr (kShift < 0) {
    return _mm512_setzero_si512();
  } else {
    return _mm512_slli_epi32(_mm512_load_si512(nsum), kShift);  // -(1 << kShift) * sum(q)
  }
}

// R rows x the panel's 16 tokens: out[i][t].
template <class Kind, int R>
void RowsBatch(const std::byte* w, std::size_t row_bytes, std::int64_t nb, const ActPanel& x, __m512* out) {
  // Per half-block mins (Q2_K) apart, as the scalar twin sums them: they nearly cancel the dots.
  __m512 acc[R], mins[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps(), mins[i] = _mm512_setzero_ps();
  Unpacked u[R];
  for (std::int64_t b0 = 0; b0 < nb; b0 += Kind::kUnit) {
    const int nbu = static_cast<int>(nb - b0 < Kind::kUnit ? nb - b0 : Kind::kUnit);
    for (int i = 0; i < R; ++i) {
      const std::byte* row = w + i * row_bytes;
      const std::int64_t first = Kind::kSuper ? b0 / 8 * Kind::kBlockBytes : b0 * Kind::kBlockBytes;
      const int bytes = Kind::kSuper ? Kind::kBlockBytes : nbu * Kind::kBlockBytes;
      for (int off = 0; off < bytes; off += 64) __builtin_prefetch(row + first + kPrefetchRows * row_bytes + off, 0, 3);
      Kind::Unpack(row, b0, nbu, &u[i]);
    }
    for (int j = 0; j < nbu; ++j) {
      const std::int64_t b = b0 + j;
      const auto* panel = reinterpret_cast<const __m512i*>(x.q + b * 512);
      const __m512 dx = _mm512_load_ps(x.d + b * 16);
      __m512i dot[R];
      if constexpr (Kind::kHalves) {
        for (int h = 0; h < 2; ++h) {
          Dots<R, 4>(u, 32 * j + 16 * h, panel + 4 * h, Offset<Kind::kShift>(x.nsum16 + (2 * b + h) * 16), dot);
          for (int i = 0; i < R; ++i) {
            acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[i]), _mm512_mul_ps(_mm512_set1_ps(u[i].s[2 * j + h]), dx), acc[i]);
          }
          if constexpr (Kind::kMins) {
            // nsum16 = -sum(q) of the half-block: adding m d_x nsum16 subtracts m d_x sum(q).
            const __m512 xs = _mm512_mul_ps(
                dx, _mm512_cvtepi32_ps(_mm512_load_si512(x.nsum16 + (2 * b + h) * 16)));
            for (int i = 0; i < R; ++i)
              mins[i] = _mm512_fmadd_ps(_mm512_set1_ps(u[i].m[2 * j + h]), xs, mins[i]);
          }
        }
      } else {
        Dots<R, 8>(u, 32 * j, panel, Offset<Kind::kShift>(x.nsum + b * 16), dot);
        for (int i = 0; i < R; ++i) {
          acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[i]), _mm512_mul_ps(_mm512_set1_ps(u[i].s[j]), dx), acc[i]);
        }
        if constexpr (Kind::kMins) {
          const __m512 xs = _mm512_load_ps(x.xsum + b * 16);
          for (int i = 0; i < R; ++i) acc[i] = _mm512_fnmadd_ps(_mm512_set1_ps(u[i].m[j]), xs, acc[i]);
        }
      }
    }
  }
  for (int i = 0; i < R; ++i) out[i] = _mm512_add_ps(acc[i], mins[i]);
}

template <class Kind>
void Batch(const void* w, std::size_t row_bytes, std::int64_t cols, const ActPanel& x, float* y,
           std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  constexpr int kR = 4;
  const std::int64_t nb = cols / 32;
  const auto* base = static_cast<const std::byte*>(w);
  alignas(64) float tmp[kR][16];
  std::int64_t r = r0;
  for (; r < r1; r += kR) {
    __m512 out[kR];
    const int rows = static_cast<int>(r1 - r < kR ? r1 - r : kR);
    if (rows == kR) {
      RowsBatch<Kind, kR>(base + r * row_bytes, row_bytes, nb, x, out);
    } else {
      for (int i = 0; i < rows; ++i) RowsBatch<Kind, 1>(base + (r + i) * row_bytes, row_bytes, nb, x, out + i);
    }
    for (int i = 0; i < rows; ++i) _mm512_store_ps(tmp[i], out[i]);
    for (int t = 0; t < x.n; ++t) {
      for (int i = 0; i < rows; ++i) y[t * ldy + r + i] = tmp[i][t];
    }
  }
}

}  // namespace

void MatMulQ4_0(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindQ4_0>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulQ5_0(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindQ5_0>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulQ5_0Groups(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                      std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindQ5_0Groups>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulQ8_0Groups(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                      std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindQ8_0Groups>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulQ8_0(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindQ8_0>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulQ4_K(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindQ4_K>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulQ6_K(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindQ6_K>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulIq4Nl(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                 std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindIq4Nl>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulIq4Xs(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                 std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindIq4Xs>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulQ4_1(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindMin<false>>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulQ5_1(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindMin<true>>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulQ5_K(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindQ5_K>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulQ3_K(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindQ3_K>(w, rb, cols, x, y, ldy, r0, r1);
}
void MatMulQ2_K(const void* w, std::size_t rb, std::int64_t cols, const ActPanel& x, float* y,
                std::int64_t ldy, std::int64_t r0, std::int64_t r1) {
  Batch<KindQ2_K>(w, rb, cols, x, y, ldy, r0, r1);
}

}  // namespace smartgen::kernels::internal::avx512vnni
