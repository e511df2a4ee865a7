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
V NibblesOf(S::VI bytes) {
  return S::ToFloat(kHigh ? S::ShrI<4>(bytes) : S::AndI(bytes, 0xF));
}
template <bool kHigh>
V Nibbles(const std::uint8_t* p) {
  return NibblesOf<kHigh>(S::WidenU8(p));
}

// Q6_K values q - 32 of L elements from widened ql and qh bytes: 4 bits of ql (shifted by
// kQlShift), 2 bits of qh (shifted by kQhShift).
template <int kQlShift, int kQhShift>
V Q6ValuesOf(S::VI ql, S::VI qh) {
  // Lanes hold single bytes, so a shift by 4 (6) leaves only the top 4 (2) bits to mask off.
  const S::VI lo = kQlShift == 4 ? S::ShrI<4>(ql) : S::AndI(ql, 0xF);
  const S::VI top = kQhShift == 6 ? S::ShrI<6>(qh) : S::AndI(S::ShrI<kQhShift>(qh), 3);
  return S::ToFloat(S::SubI(S::OrI(lo, S::ShlI<4>(top)), 32));
}
template <int kQlShift, int kQhShift>
V Q6Values(const std::uint8_t* ql, const std::uint8_t* qh) {
  return Q6ValuesOf<kQlShift, kQhShift>(S::WidenU8(ql), S::WidenU8(qh));
}

// The 8 scales and 8 mins of a Q4_K block times its d and dmin: dsc[j] = d * sc_j and
// dm[j] = dmin * m_j. The 6-bit fields are regrouped into bytes with word operations (the
// masks of ggml's AVX2 kernel) instead of unpacking each field on its own.
void Q4KScales(const std::byte* blk, float* dsc, float* dm) {
  std::uint32_t u[4];
  __builtin_memcpy(u, blk + 4, 12);
  constexpr std::uint32_t k6 = 0x3f3f3f3f, k4 = 0x0f0f0f0f, k2 = 0x03030303;
  u[3] = ((u[2] >> 4) & k4) | (((u[1] >> 6) & k2) << 4);  // m4..m7
  const std::uint32_t m0 = u[1] & k6;                      // m0..m3
  u[1] = (u[2] & k4) | (((u[0] >> 6) & k2) << 4);          // sc4..sc7
  u[2] = m0;
  u[0] &= k6;  // sc0..sc3
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(u);
  const float d = LoadHalf(blk), dmin = LoadHalf(blk + 2);
  for (int j = 0; j < 8; ++j) {
    dsc[j] = d * static_cast<float>(bytes[j]);
    dm[j] = dmin * static_cast<float>(bytes[j + 8]);
  }
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

// Lane-wise sum of x[0..32) (its horizontal sum is the block's sum).
V Sum32(const float* x) {
  V s = S::Load(x);
  for (int j = L; j < 32; j += L) s = S::Add(s, S::Load(x + j));
  return s;
}

// Q4_0: y = sum_b d_b * (sum q x - 8 * sum x) over blocks of 32. Each widened byte gives a
// low nibble (element j) and a high one (element j + 16).
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
      const auto* qs = reinterpret_cast<const std::uint8_t*>(blk + 2);
      V p = S::Zero();
      for (int j = 0; j < 16; j += L) {
        const S::VI bytes = S::WidenU8(qs + j);
        p = S::Fma(NibblesOf<false>(bytes), S::Load(xb + j), p);
        p = S::Fma(NibblesOf<true>(bytes), S::Load(xb + 16 + j), p);
      }
      acc[i] = S::Fnma(xs, S::Set1(8.0f * d), S::Fma(p, S::Set1(d), acc[i]));
    }
  }
  for (int i = 0; i < R; ++i) y[i] = S::ReduceAdd(acc[i]);
}

// Q4_K: y = sum_j (d sc_j) * sum q x - (dmin m_j) * sum x over the 8 sub-blocks of a block;
// the min terms of a block are a scalar dot with x's sub-block sums (shared by the rows).
template <int R>
void DotRowsQ4_K(const std::byte* w, std::size_t row_bytes, std::int64_t cols, const float* x,
                 float* y) {
  V acc[R];
  float mins[R];
  for (int i = 0; i < R; ++i) acc[i] = S::Zero(), mins[i] = 0.0f;
  for (std::int64_t b = 0; b < cols / kQK; ++b) {
    const float* xb = x + b * kQK;
    float xsum[8];
    for (int j = 0; j < 8; ++j) xsum[j] = S::ReduceAdd(Sum32(xb + 32 * j));
    for (int i = 0; i < R; ++i) {
      const std::byte* blk = w + i * row_bytes + b * kQ4KBytes;
      PrefetchAhead(blk, 0, row_bytes);
      PrefetchAhead(blk, 64, row_bytes);
      PrefetchAhead(blk, 128, row_bytes);
      float dsc[8], dm[8];
      Q4KScales(blk, dsc, dm);
      float m = 0.0f;
      for (int j = 0; j < 8; ++j) m += dm[j] * xsum[j];
      mins[i] += m;
      const auto* qs = reinterpret_cast<const std::uint8_t*>(blk + 16);
      V a = acc[i];
      for (int g = 0; g < 4; ++g) {
        const float* xg = xb + 64 * g;
        V p0 = S::Zero(), p1 = S::Zero();
        for (int l = 0; l < 32; l += L) {
          const S::VI bytes = S::WidenU8(qs + 32 * g + l);
          p0 = S::Fma(NibblesOf<false>(bytes), S::Load(xg + l), p0);
          p1 = S::Fma(NibblesOf<true>(bytes), S::Load(xg + 32 + l), p1);
        }
        a = S::Fma(p0, S::Set1(dsc[2 * g]), a);
        a = S::Fma(p1, S::Set1(dsc[2 * g + 1]), a);
      }
      acc[i] = a;
    }
  }
  for (int i = 0; i < R; ++i) y[i] = S::ReduceAdd(acc[i]) - mins[i];
}

// Q6_K: y = sum over sub-blocks of 16 of (d sc_j) * sum (q - 32) x. Each (ql, ql + 32, qh)
// byte triple gives four values, one per quarter of the half-block.
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
            const S::VI la = S::WidenU8(ql + l), lb = S::WidenU8(ql + l + 32);
            const S::VI h = S::WidenU8(qh + l);
            p1 = S::Fma(Q6ValuesOf<0, 0>(la, h), S::Load(xh + l), p1);
            p2 = S::Fma(Q6ValuesOf<0, 2>(lb, h), S::Load(xh + l + 32), p2);
            p3 = S::Fma(Q6ValuesOf<4, 4>(la, h), S::Load(xh + l + 64), p3);
            p4 = S::Fma(Q6ValuesOf<4, 6>(lb, h), S::Load(xh + l + 96), p4);
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
