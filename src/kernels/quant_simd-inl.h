// The 4- and 6-bit weight kinds (Q4_0, Q4_K, Q6_K; layouts in quant.h) for the matrix kernels
// of matmul_simd-inl.h, which includes this file inside its ISA namespace (S, V, L,
// HalfToFloat and PrefetchAhead come from there).
//
// Kind*::Load dequantizes L elements exactly as ggml does (they feed the GEMM's packed panels).
// The GEMV row dots instead sum q * x per sub-block and apply the scale once (Q4_0 and Q4_K
// fold their offsets in as scale * sum(x), with x's sub-block sums shared by the rows of a
// pass): the same products in another order, within f32 rounding of the exact result.
#ifndef SMARTGEN_SIMD_NS
#error "include only from kernels/matmul_simd-inl.h"
#endif

constexpr int kQ4_0Bytes = 18;   // sizeof(BlockQ4_0): f16 d + 16 bytes of nibbles
constexpr int kQK = 256;         // kQK_K: elements per K-quant super-block
constexpr int kQ4KBytes = 144;   // sizeof(BlockQ4_K): d, dmin, scales[12], qs[128]
constexpr int kQ6KBytes = 210;   // sizeof(BlockQ6_K): ql[128], qh[64], scales[16], d
constexpr int kQ6KScales = 192;  // offset of scales in BlockQ6_K
constexpr int kQ6KD = 208;       // offset of d in BlockQ6_K

float LoadHalf(const std::byte* p) {
  std::uint16_t h;
  __builtin_memcpy(&h, p, 2);
  return HalfToFloat(h);
}

// The 6-bit scale and min of sub-block j of a Q4_K block: a copy of quant.h's Q4KScaleMin,
// since ISA files must not call header inline functions (kernel_table.h).
void ScaleMinK4(int j, const std::uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Nibbles of L bytes as f32: the low ones (kHigh false) or the high ones.
template <bool kHigh>
V Nibbles(const std::uint8_t* p) {
  const S::VI b = S::WidenU8(p);
  return S::ToFloat(kHigh ? S::ShrI<4>(b) : S::AndI(b, 0xF));
}

// Q6_K values q - 32 of L elements: 4 bits of ql (shifted by kQlShift), 2 of qh (kQhShift).
template <int kQlShift, int kQhShift>
V Q6Values(const std::uint8_t* ql, const std::uint8_t* qh) {
  const S::VI lo = S::AndI(S::ShrI<kQlShift>(S::WidenU8(ql)), 0xF);
  const S::VI hi = S::ShlI<4>(S::AndI(S::ShrI<kQhShift>(S::WidenU8(qh)), 3));
  return S::ToFloat(S::SubI(S::OrI(lo, hi), 32));
}

struct KindQ4_0 {
  static constexpr int kBytes = 1;  // prefetch stride per element (approximate)
  static V Load(const std::byte* row, std::int64_t k) {
    const std::byte* blk = row + (k / 32) * kQ4_0Bytes;
    const int e = static_cast<int>(k % 32);
    const auto* qs = reinterpret_cast<const std::uint8_t*>(blk + 2);
    const S::VI q = e < 16 ? S::AndI(S::WidenU8(qs + e), 0xF) : S::ShrI<4>(S::WidenU8(qs + e - 16));
    return S::Mul(S::ToFloat(S::SubI(q, 8)), S::Set1(LoadHalf(blk)));
  }
  static float Scalar(const std::byte* row, std::int64_t k) {
    const std::byte* blk = row + (k / 32) * kQ4_0Bytes;
    const int e = static_cast<int>(k % 32);
    const auto q = static_cast<std::uint8_t>(blk[2 + e % 16]);
    return static_cast<float>((e < 16 ? q & 0xF : q >> 4) - 8) * LoadHalf(blk);
  }
};

struct KindQ4_K {
  static constexpr int kBytes = 1;
  static V Load(const std::byte* row, std::int64_t k) {
    const std::byte* blk = row + (k / kQK) * kQ4KBytes;
    const int e = static_cast<int>(k % kQK), g = e / 64, high = (e % 64) / 32;
    int sc, m;
    ScaleMinK4(2 * g + high, reinterpret_cast<const std::uint8_t*>(blk + 4), &sc, &m);
    const float d1 = LoadHalf(blk) * static_cast<float>(sc);
    const float m1 = LoadHalf(blk + 2) * static_cast<float>(m);
    const auto* q = reinterpret_cast<const std::uint8_t*>(blk + 16) + 32 * g + e % 32;
    const V nib = high ? Nibbles<true>(q) : Nibbles<false>(q);
    return S::Sub(S::Mul(S::Set1(d1), nib), S::Set1(m1));  // d1 * q is exact
  }
  static float Scalar(const std::byte* row, std::int64_t k) {
    const std::byte* blk = row + (k / kQK) * kQ4KBytes;
    const int e = static_cast<int>(k % kQK), g = e / 64, high = (e % 64) / 32;
    int sc, m;
    ScaleMinK4(2 * g + high, reinterpret_cast<const std::uint8_t*>(blk + 4), &sc, &m);
    const auto q = static_cast<std::uint8_t>(blk[16 + 32 * g + e % 32]);
    return LoadHalf(blk) * static_cast<float>(sc) * static_cast<float>(high ? q >> 4 : q & 0xF) -
           LoadHalf(blk + 2) * static_cast<float>(m);
  }
};

struct KindQ6_K {
  static constexpr int kBytes = 1;
  static V Load(const std::byte* row, std::int64_t k) {
    const std::byte* blk = row + (k / kQK) * kQ6KBytes;
    const int e = static_cast<int>(k % kQK), half = e / 128, quad = (e % 128) / 32, l = e % 32;
    const auto* ql = reinterpret_cast<const std::uint8_t*>(blk) + 64 * half + l + (quad & 1) * 32;
    const auto* qh = reinterpret_cast<const std::uint8_t*>(blk + 128) + 32 * half + l;
    const auto sc = reinterpret_cast<const std::int8_t*>(blk + kQ6KScales)[8 * half + l / 16 + 2 * quad];
    V q;
    switch (quad) {
      case 0: q = Q6Values<0, 0>(ql, qh); break;
      case 1: q = Q6Values<0, 2>(ql, qh); break;
      case 2: q = Q6Values<4, 4>(ql, qh); break;
      default: q = Q6Values<4, 6>(ql, qh); break;
    }
    return S::Mul(S::Set1(LoadHalf(blk + kQ6KD) * static_cast<float>(sc)), q);  // (d * sc) * q
  }
  static float Scalar(const std::byte* row, std::int64_t k) {
    const std::byte* blk = row + (k / kQK) * kQ6KBytes;
    const int e = static_cast<int>(k % kQK), half = e / 128, quad = (e % 128) / 32, l = e % 32;
    const auto ql = static_cast<int>(blk[64 * half + l + (quad & 1) * 32]);
    const auto qh = static_cast<int>(blk[128 + 32 * half + l]);
    const int q = (((quad >= 2 ? ql >> 4 : ql) & 0xF) | (((qh >> (2 * quad)) & 3) << 4)) - 32;
    const auto sc = reinterpret_cast<const std::int8_t*>(blk + kQ6KScales)[8 * half + l / 16 + 2 * quad];
    return LoadHalf(blk + kQ6KD) * static_cast<float>(sc) * static_cast<float>(q);
  }
};

// sum(q[i] * x[i]) over 32 elements as a vector: nibbles of 32 bytes at q (kHigh: high ones)
// against x[0..32), or, for Q4_0, the low then high nibbles of 16 bytes.
template <bool kHigh>
V NibbleDot32(const std::uint8_t* q, const float* x) {
  V p = S::Mul(Nibbles<kHigh>(q), S::Load(x));
  for (int j = L; j < 32; j += L) p = S::Fma(Nibbles<kHigh>(q + j), S::Load(x + j), p);
  return p;
}
V NibbleDotQ4_0(const std::uint8_t* q, const float* x) {
  V p = S::Mul(Nibbles<false>(q), S::Load(x));
  for (int j = L; j < 16; j += L) p = S::Fma(Nibbles<false>(q + j), S::Load(x + j), p);
  for (int j = 0; j < 16; j += L) p = S::Fma(Nibbles<true>(q + j), S::Load(x + 16 + j), p);
  return p;
}
// Lane-wise sum of x[0..32) (its horizontal sum is the block's sum).
V Sum32(const float* x) {
  V s = S::Load(x);
  for (int j = L; j < 32; j += L) s = S::Add(s, S::Load(x + j));
  return s;
}

// Q4_0: y = sum_b d_b * (sum q x - 8 * sum x) over blocks of 32.
template <int R>
void DotRowsQ4_0(const std::byte* w, std::size_t row_bytes, std::int64_t cols, const float* x,
                 float* y) {
  V acc[R];
  for (int i = 0; i < R; ++i) acc[i] = S::Zero();
  for (std::int64_t b = 0; b < cols / 32; ++b) {
    const float* xb = x + b * 32;
    const V xs = Sum32(xb);
    for (int i = 0; i < R; ++i) {
      const std::byte* blk = w + i * row_bytes + b * kQ4_0Bytes;
      PrefetchAhead(blk, 0, row_bytes);
      const float d = LoadHalf(blk);
      const V p = NibbleDotQ4_0(reinterpret_cast<const std::uint8_t*>(blk + 2), xb);
      acc[i] = S::Fnma(xs, S::Set1(8.0f * d), S::Fma(p, S::Set1(d), acc[i]));
    }
  }
  for (int i = 0; i < R; ++i) y[i] = S::ReduceAdd(acc[i]);
}

// Q4_K: y = sum_j (d sc_j) * sum q x - (dmin m_j) * sum x over the 8 sub-blocks of each block.
template <int R>
void DotRowsQ4_K(const std::byte* w, std::size_t row_bytes, std::int64_t cols, const float* x,
                 float* y) {
  V acc[R];
  for (int i = 0; i < R; ++i) acc[i] = S::Zero();
  for (std::int64_t b = 0; b < cols / kQK; ++b) {
    const float* xb = x + b * kQK;
    V xs[8];
    for (int j = 0; j < 8; ++j) xs[j] = Sum32(xb + 32 * j);
    for (int i = 0; i < R; ++i) {
      const std::byte* blk = w + i * row_bytes + b * kQ4KBytes;
      PrefetchAhead(blk, 0, row_bytes);
      PrefetchAhead(blk, 64, row_bytes);
      PrefetchAhead(blk, 128, row_bytes);
      const float d = LoadHalf(blk), dmin = LoadHalf(blk + 2);
      const auto* scales = reinterpret_cast<const std::uint8_t*>(blk + 4);
      const auto* qs = reinterpret_cast<const std::uint8_t*>(blk + 16);
      V a = acc[i];
      for (int g = 0; g < 4; ++g) {
        int sc0, m0, sc1, m1;
        ScaleMinK4(2 * g, scales, &sc0, &m0);
        ScaleMinK4(2 * g + 1, scales, &sc1, &m1);
        const V p0 = NibbleDot32<false>(qs + 32 * g, xb + 64 * g);
        const V p1 = NibbleDot32<true>(qs + 32 * g, xb + 64 * g + 32);
        a = S::Fma(p0, S::Set1(d * static_cast<float>(sc0)), a);
        a = S::Fma(p1, S::Set1(d * static_cast<float>(sc1)), a);
        a = S::Fnma(xs[2 * g], S::Set1(dmin * static_cast<float>(m0)), a);
        a = S::Fnma(xs[2 * g + 1], S::Set1(dmin * static_cast<float>(m1)), a);
      }
      acc[i] = a;
    }
  }
  for (int i = 0; i < R; ++i) y[i] = S::ReduceAdd(acc[i]);
}

// Q6_K: y = sum over sub-blocks of 16 of (d sc_j) * sum (q - 32) x.
template <int R>
void DotRowsQ6_K(const std::byte* w, std::size_t row_bytes, std::int64_t cols, const float* x,
                 float* y) {
  V acc[R];
  for (int i = 0; i < R; ++i) acc[i] = S::Zero();
  for (std::int64_t b = 0; b < cols / kQK; ++b) {
    for (int i = 0; i < R; ++i) {
      const std::byte* blk = w + i * row_bytes + b * kQ6KBytes;
      PrefetchAhead(blk, 0, row_bytes);
      PrefetchAhead(blk, 64, row_bytes);
      PrefetchAhead(blk, 128, row_bytes);
      PrefetchAhead(blk, 192, row_bytes);
      const float d = LoadHalf(blk + kQ6KD);
      V a = acc[i];
      for (int half = 0; half < 2; ++half) {
        const auto* ql = reinterpret_cast<const std::uint8_t*>(blk) + 64 * half;
        const auto* qh = reinterpret_cast<const std::uint8_t*>(blk + 128) + 32 * half;
        const auto* sc = reinterpret_cast<const std::int8_t*>(blk + kQ6KScales) + 8 * half;
        const float* xh = x + b * kQK + 128 * half;
        for (int g = 0; g < 2; ++g) {  // 16-element groups: l in [16 g, 16 g + 16)
          V p1 = S::Zero(), p2 = S::Zero(), p3 = S::Zero(), p4 = S::Zero();
          for (int l = 16 * g; l < 16 * g + 16; l += L) {
            p1 = S::Fma(Q6Values<0, 0>(ql + l, qh + l), S::Load(xh + l), p1);
            p2 = S::Fma(Q6Values<0, 2>(ql + l + 32, qh + l), S::Load(xh + l + 32), p2);
            p3 = S::Fma(Q6Values<4, 4>(ql + l, qh + l), S::Load(xh + l + 64), p3);
            p4 = S::Fma(Q6Values<4, 6>(ql + l + 32, qh + l), S::Load(xh + l + 96), p4);
          }
          a = S::Fma(p1, S::Set1(d * static_cast<float>(sc[g + 0])), a);
          a = S::Fma(p2, S::Set1(d * static_cast<float>(sc[g + 2])), a);
          a = S::Fma(p3, S::Set1(d * static_cast<float>(sc[g + 4])), a);
          a = S::Fma(p4, S::Set1(d * static_cast<float>(sc[g + 6])), a);
        }
      }
      acc[i] = a;
    }
  }
  for (int i = 0; i < R; ++i) y[i] = S::ReduceAdd(acc[i]);
}
