// The weight kinds of quant_more.h for the matrix kernels of matmul_simd-inl.h, which includes
// this file inside its ISA namespace after quant_simd-inl.h (S, V, L, LoadHalf, ScaleMinK4,
// Q4KScales, Sum32 and PrefetchAhead come from there).
//
// Fused kernels (dequantize in registers) for every type:
// Q4_1, Q5_0, Q5_1 (KindLegacy; llama.cpp's Q4_K_M / Q5_K_M fall back to Q5_0 / Q5_1 on rows
// that are not 256 wide), Q5_K, Q3_K, Q2_K, IQ4_NL and IQ4_XS. Each Kind's Load dequantizes
// exactly as ggml (the GEMM's packed panels); the GEMV row dots apply each scale once per
// sub-block, within f32 rounding of the exact product.
#ifndef SMARTGEN_SIMD_NS
#error "include only from kernels/matmul_simd-inl.h"
#endif

// 32-element blocks: f16 d, [f16 m], [u32 qh], 16 bytes of nibbles. Element e < 16 is the low
// nibble of qs[e], element e >= 16 the high nibble of qs[e - 16]; bit e of qh is its fifth bit.
//   kMin (Q4_1, Q5_1): x = d * q + m;   otherwise (Q5_0): x = d * (q - 16).
template <bool kMin, bool kHigh>
struct KindLegacy {
  static constexpr int kBytes = 1;
  static constexpr int kBlockBytes = 2 + (kMin ? 2 : 0) + (kHigh ? 4 : 0) + 16;
  static constexpr int kQh = kMin ? 4 : 2;
  static constexpr int kQs = kQh + (kHigh ? 4 : 0);
  static constexpr int kOffset = kMin ? 0 : (kHigh ? 16 : 8);

  static std::uint32_t Qh(const std::byte* blk) {
    std::uint32_t qh = 0;
    if constexpr (kHigh) __builtin_memcpy(&qh, blk + kQh, 4);
    return qh;
  }
  // Unsigned q of elements e .. e + L of a block (e a multiple of L).
  static S::VI Quants(const std::byte* blk, int e) {
    const auto* qs = reinterpret_cast<const std::uint8_t*>(blk + kQs);
    S::VI q = e < 16 ? S::AndI(S::WidenU8(qs + e), 0xF) : S::ShrI<4>(S::WidenU8(qs + e - 16));
    if constexpr (kHigh) q = S::OrI(q, S::ShlI<4>(S::Bits(Qh(blk), e)));
    return q;
  }
  // d * q is exact, so the single rounding of the FMA is ggml's d * q + m.
  static V Load(const std::byte* row, std::int64_t k) {
    const std::byte* blk = row + (k / 32) * kBlockBytes;
    const int e = static_cast<int>(k % 32);
    const V d = S::Set1(LoadHalf(blk));
    if constexpr (kMin) return S::Fma(S::ToFloat(Quants(blk, e)), d, S::Set1(LoadHalf(blk + 2)));
    return S::Mul(S::ToFloat(S::SubI(Quants(blk, e), kOffset)), d);
  }
  static float Scalar(const std::byte* row, std::int64_t k) {
    const std::byte* blk = row + (k / 32) * kBlockBytes;
    const int e = static_cast<int>(k % 32);
    const auto byte = static_cast<int>(blk[kQs + e % 16]);
    int q = e < 16 ? byte & 0xF : byte >> 4;
    if constexpr (kHigh) q |= static_cast<int>((Qh(blk) >> e) & 1) << 4;
    const float d = LoadHalf(blk);
    if constexpr (kMin) return static_cast<float>(q) * d + LoadHalf(blk + 2);
    return static_cast<float>(q - kOffset) * d;
  }
};
using KindQ4_1 = KindLegacy<true, false>;
using KindQ5_0 = KindLegacy<false, true>;
using KindQ5_1 = KindLegacy<true, true>;

// y = sum_b d_b * sum q x + (m_b or -kOffset d_b) * sum x over blocks of 32.
template <typename Kind, int R>
void DotRowsLegacy(const std::byte* w, std::size_t row_bytes, std::int64_t cols, const float* x,
                   float* y) {
  V acc[R];
  for (int i = 0; i < R; ++i) acc[i] = S::Zero();
  for (std::int64_t b = 0; b < cols / 32; ++b) {
    const float* xb = x + b * 32;
    const V xs = Sum32(xb);
    for (int i = 0; i < R; ++i) {
      const std::byte* blk = w + i * row_bytes + b * Kind::kBlockBytes;
      PrefetchAhead(blk, 0, row_bytes);
      const float d = LoadHalf(blk);
      V p = S::Zero();
      for (int e = 0; e < 32; e += L) p = S::Fma(S::ToFloat(Kind::Quants(blk, e)), S::Load(xb + e), p);
      const V a = S::Fma(p, S::Set1(d), acc[i]);
      if constexpr (Kind::kOffset == 0) {
        acc[i] = S::Fma(xs, S::Set1(LoadHalf(blk + 2)), a);
      } else {
        acc[i] = S::Fnma(xs, S::Set1(static_cast<float>(Kind::kOffset) * d), a);
      }
    }
  }
  for (int i = 0; i < R; ++i) y[i] = S::ReduceAdd(acc[i]);
}

// Q5_K: Q4_K's layout (d, dmin, scales[12]) plus qh[32] at byte 16 and qs[128] at byte 48.
constexpr int kQ5KBytes = 176;
constexpr int kQ5KQh = 16;
constexpr int kQ5KQs = 48;

struct KindQ5_K {
  static constexpr int kBytes = 1;
  static V Load(const std::byte* row, std::int64_t k) {
    const std::byte* blk = row + (k / kQK) * kQ5KBytes;
    const int e = static_cast<int>(k % kQK), g = e / 64, high = (e % 64) / 32, l = e % 32;
    int sc, m;
    ScaleMinK4(2 * g + high, reinterpret_cast<const std::uint8_t*>(blk + 4), &sc, &m);
    const float d1 = LoadHalf(blk) * static_cast<float>(sc);
    const float m1 = LoadHalf(blk + 2) * static_cast<float>(m);
    const S::VI bytes = S::WidenU8(reinterpret_cast<const std::uint8_t*>(blk + kQ5KQs) + 32 * g + l);
    const S::VI h = S::WidenU8(reinterpret_cast<const std::uint8_t*>(blk + kQ5KQh) + l);
    const S::VI nib = high ? S::ShrI<4>(bytes) : S::AndI(bytes, 0xF);
    const S::VI q = S::OrI(nib, S::ShlI<4>(S::AndI(S::ShrIVar(h, 2 * g + high), 1)));
    return S::Sub(S::Mul(S::Set1(d1), S::ToFloat(q)), S::Set1(m1));  // d1 * q is exact
  }
  static float Scalar(const std::byte* row, std::int64_t k) {
    const std::byte* blk = row + (k / kQK) * kQ5KBytes;
    const int e = static_cast<int>(k % kQK), g = e / 64, high = (e % 64) / 32, l = e % 32;
    int sc, m;
    ScaleMinK4(2 * g + high, reinterpret_cast<const std::uint8_t*>(blk + 4), &sc, &m);
    const auto byte = static_cast<int>(blk[kQ5KQs + 32 * g + l]);
    const auto h = static_cast<int>(blk[kQ5KQh + l]);
    const int q = (high ? byte >> 4 : byte & 0xF) | (((h >> (2 * g + high)) & 1) << 4);
    return LoadHalf(blk) * static_cast<float>(sc) * static_cast<float>(q) -
           LoadHalf(blk + 2) * static_cast<float>(m);
  }
};

// Q5_K: as DotRowsQ4_K with the fifth bits of qh (bits 2g and 2g + 1 of qh[l]).
template <int R>
void DotRowsQ5_K(const std::byte* w, std::size_t row_bytes, std::int64_t cols, const float* x,
                 float* y) {
  V acc[R];
  float mins[R];
  for (int i = 0; i < R; ++i) acc[i] = S::Zero(), mins[i] = 0.0f;
  for (std::int64_t b = 0; b < cols / kQK; ++b) {
    const float* xb = x + b * kQK;
    float xsum[8];
    for (int j = 0; j < 8; ++j) xsum[j] = S::ReduceAdd(Sum32(xb + 32 * j));
    for (int i = 0; i < R; ++i) {
      const std::byte* blk = w + i * row_bytes + b * kQ5KBytes;
      PrefetchAhead(blk, 0, row_bytes);
      PrefetchAhead(blk, 64, row_bytes);
      PrefetchAhead(blk, 128, row_bytes);
      float dsc[8], dm[8];
      Q4KScales(blk, dsc, dm);
      float m = 0.0f;
      for (int j = 0; j < 8; ++j) m += dm[j] * xsum[j];
      mins[i] += m;
      const auto* qs = reinterpret_cast<const std::uint8_t*>(blk + kQ5KQs);
      const auto* qh = reinterpret_cast<const std::uint8_t*>(blk + kQ5KQh);
      V a = acc[i];
      for (int g = 0; g < 4; ++g) {
        const float* xg = xb + 64 * g;
        V p0 = S::Zero(), p1 = S::Zero();
        for (int l = 0; l < 32; l += L) {
          const S::VI bytes = S::WidenU8(qs + 32 * g + l);
          const S::VI h = S::ShrIVar(S::WidenU8(qh + l), 2 * g);
          const S::VI lo = S::OrI(S::AndI(bytes, 0xF), S::ShlI<4>(S::AndI(h, 1)));
          const S::VI hi = S::OrI(S::ShrI<4>(bytes), S::ShlI<4>(S::AndI(S::ShrI<1>(h), 1)));
          p0 = S::Fma(S::ToFloat(lo), S::Load(xg + l), p0);
          p1 = S::Fma(S::ToFloat(hi), S::Load(xg + 32 + l), p1);
        }
        a = S::Fma(p0, S::Set1(dsc[2 * g]), a);
        a = S::Fma(p1, S::Set1(dsc[2 * g + 1]), a);
      }
      acc[i] = a;
    }
  }
  for (int i = 0; i < R; ++i) y[i] = S::ReduceAdd(acc[i]) - mins[i];
}

// Q2_K and Q3_K share a layout of 2-bit values: element 128 h + 32 j + l (l < 32) is bits 2j
// of qs[32 h + l], in sub-block 8 h + 2 j + l / 16 of 16 elements. Q3_K's third bit is bit
// 4 h + j of hmask[l] (value = q + 4 hbit - 4). L <= 16, so a vector never straddles a
// sub-block.
constexpr int kQ2KBytes = 84;   // scales[16], qs[64], d, dmin
constexpr int kQ3KBytes = 110;  // hmask[32], qs[64], scales[12], d

// The 16 6-bit scales of a Q3_K block, minus 32 (quant_more.h's Q3KScale, unpacked here).
void Q3KScales(const std::uint8_t* s, int* out) {
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
    const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    out[j] = (low | (high << 4)) - 32;
  }
}

// Q3_K values q + 4 hbit - 4 of elements 128 h + 32 j + l .. + L.
S::VI Q3Values(const std::uint8_t* blk, int h, int j, int l) {
  const S::VI q = S::AndI(S::ShrIVar(S::WidenU8(blk + 32 + 32 * h + l), 2 * j), 3);
  const S::VI hb = S::AndI(S::ShrIVar(S::WidenU8(blk + l), 4 * h + j), 1);
  return S::SubI(S::OrI(q, S::ShlI<2>(hb)), 4);
}

struct KindQ3_K {
  static constexpr int kBytes = 1;
  // (d * scale) * value is exact (11 + 6 + 3 significant bits), as ggml computes it.
  static V Load(const std::byte* row, std::int64_t k) {
    const auto* blk = reinterpret_cast<const std::uint8_t*>(row + (k / kQK) * kQ3KBytes);
    const int e = static_cast<int>(k % kQK), h = e / 128, j = (e % 128) / 32, l = e % 32;
    int sc[16];
    Q3KScales(blk + 96, sc);
    const float dl = LoadHalf(reinterpret_cast<const std::byte*>(blk + 108)) *
                     static_cast<float>(sc[8 * h + 2 * j + l / 16]);
    return S::Mul(S::Set1(dl), S::ToFloat(Q3Values(blk, h, j, l)));
  }
  static float Scalar(const std::byte* row, std::int64_t k) {
    const auto* blk = reinterpret_cast<const std::uint8_t*>(row + (k / kQK) * kQ3KBytes);
    const int e = static_cast<int>(k % kQK), h = e / 128, j = (e % 128) / 32, l = e % 32;
    int sc[16];
    Q3KScales(blk + 96, sc);
    const int v = ((blk[32 + 32 * h + l] >> (2 * j)) & 3) + 4 * ((blk[l] >> (4 * h + j)) & 1) - 4;
    return LoadHalf(reinterpret_cast<const std::byte*>(blk + 108)) *
           static_cast<float>(sc[8 * h + 2 * j + l / 16]) * static_cast<float>(v);
  }
};

// Q3_K: y = sum over sub-blocks of (d * scale_s) * sum value * x.
template <int R>
void DotRowsQ3_K(const std::byte* w, std::size_t row_bytes, std::int64_t cols, const float* x,
                 float* y) {
  V acc[R];
  for (int i = 0; i < R; ++i) acc[i] = S::Zero();
  for (std::int64_t b = 0; b < cols / kQK; ++b) {
    const float* xb = x + b * kQK;
    for (int i = 0; i < R; ++i) {
      const auto* blk = reinterpret_cast<const std::uint8_t*>(w + i * row_bytes + b * kQ3KBytes);
      PrefetchAhead(reinterpret_cast<const std::byte*>(blk), 0, row_bytes);
      PrefetchAhead(reinterpret_cast<const std::byte*>(blk), 64, row_bytes);
      int sc[16];
      Q3KScales(blk + 96, sc);
      const float d = LoadHalf(reinterpret_cast<const std::byte*>(blk + 108));
      V a = acc[i];
      for (int h = 0; h < 2; ++h) {
        for (int j = 0; j < 4; ++j) {
          const float* xs = xb + 128 * h + 32 * j;
          for (int l = 0; l < 32; l += L) {
            const V p = S::Mul(S::ToFloat(Q3Values(blk, h, j, l)), S::Load(xs + l));
            a = S::Fma(p, S::Set1(d * static_cast<float>(sc[8 * h + 2 * j + l / 16])), a);
          }
        }
      }
      acc[i] = a;
    }
  }
  for (int i = 0; i < R; ++i) y[i] = S::ReduceAdd(acc[i]);
}

// Q2_K values q of elements 128 h + 32 j + l .. + L.
S::VI Q2Values(const std::uint8_t* blk, int h, int j, int l) {
  return S::AndI(S::ShrIVar(S::WidenU8(blk + 16 + 32 * h + l), 2 * j), 3);
}

struct KindQ2_K {
  static constexpr int kBytes = 1;
  // dl * q is exact; dl * q - ml rounds once, as ggml's.
  static V Load(const std::byte* row, std::int64_t k) {
    const auto* blk = reinterpret_cast<const std::uint8_t*>(row + (k / kQK) * kQ2KBytes);
    const int e = static_cast<int>(k % kQK), h = e / 128, j = (e % 128) / 32, l = e % 32;
    const int sc = blk[8 * h + 2 * j + l / 16];
    const float dl = LoadHalf(reinterpret_cast<const std::byte*>(blk + 80)) * static_cast<float>(sc & 0xF);
    const float ml = LoadHalf(reinterpret_cast<const std::byte*>(blk + 82)) * static_cast<float>(sc >> 4);
    return S::Sub(S::Mul(S::Set1(dl), S::ToFloat(Q2Values(blk, h, j, l))), S::Set1(ml));
  }
  static float Scalar(const std::byte* row, std::int64_t k) {
    const auto* blk = reinterpret_cast<const std::uint8_t*>(row + (k / kQK) * kQ2KBytes);
    const int e = static_cast<int>(k % kQK), h = e / 128, j = (e % 128) / 32, l = e % 32;
    const int sc = blk[8 * h + 2 * j + l / 16];
    const int q = (blk[16 + 32 * h + l] >> (2 * j)) & 3;
    return LoadHalf(reinterpret_cast<const std::byte*>(blk + 80)) * static_cast<float>(sc & 0xF) *
               static_cast<float>(q) -
           LoadHalf(reinterpret_cast<const std::byte*>(blk + 82)) * static_cast<float>(sc >> 4);
  }
};

// Q2_K: y = sum_s (d sc_s) * sum q x - (dmin m_s) * sum x; the sub-block sums of x (16 per
// block) are shared by the rows.
template <int R>
void DotRowsQ2_K(const std::byte* w, std::size_t row_bytes, std::int64_t cols, const float* x,
                 float* y) {
  V acc[R];
  float mins[R];
  for (int i = 0; i < R; ++i) acc[i] = S::Zero(), mins[i] = 0.0f;
  for (std::int64_t b = 0; b < cols / kQK; ++b) {
    const float* xb = x + b * kQK;
    float xsum[16];  // sub-block s: elements 128 (s / 8) + 32 ((s % 8) / 2) + 16 (s % 2) ..
    for (int s = 0; s < 16; ++s) {
      const float* xs = xb + 128 * (s / 8) + 32 * ((s % 8) / 2) + 16 * (s % 2);
      V v = S::Load(xs);
      for (int t = L; t < 16; t += L) v = S::Add(v, S::Load(xs + t));
      xsum[s] = S::ReduceAdd(v);
    }
    for (int i = 0; i < R; ++i) {
      const auto* blk = reinterpret_cast<const std::uint8_t*>(w + i * row_bytes + b * kQ2KBytes);
      PrefetchAhead(reinterpret_cast<const std::byte*>(blk), 0, row_bytes);
      PrefetchAhead(reinterpret_cast<const std::byte*>(blk), 64, row_bytes);
      const float d = LoadHalf(reinterpret_cast<const std::byte*>(blk + 80));
      const float dmin = LoadHalf(reinterpret_cast<const std::byte*>(blk + 82));
      float m = 0.0f;
      for (int s = 0; s < 16; ++s) m += dmin * static_cast<float>(blk[s] >> 4) * xsum[s];
      mins[i] += m;
      V a = acc[i];
      for (int h = 0; h < 2; ++h) {
        for (int j = 0; j < 4; ++j) {
          const float* xs = xb + 128 * h + 32 * j;
          for (int l = 0; l < 32; l += L) {
            const V p = S::Mul(S::ToFloat(Q2Values(blk, h, j, l)), S::Load(xs + l));
            a = S::Fma(p, S::Set1(d * static_cast<float>(blk[8 * h + 2 * j + l / 16] & 0xF)), a);
          }
        }
      }
      acc[i] = a;
    }
  }
  for (int i = 0; i < R; ++i) y[i] = S::ReduceAdd(acc[i]) - mins[i];
}

// IQ4_NL (blocks of 32: f16 d, 16 bytes of nibbles as Q4_0) and IQ4_XS (blocks of 256: f16 d,
// u16 scales_h, scales_l[4], then 8 sub-blocks of 16 nibble bytes): x = scale * grid[q].
constexpr float kIq4Grid[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                1,    13,   25,  38,  53,  69,  89,  113};
constexpr int kIq4NlBytes = 18;
constexpr int kIq4XsBytes = 136;

// Grid values of nibbles e .. e + L of a 16-byte group (e < 16: low nibbles).
V Iq4Values(const std::uint8_t* qs, int e) {
  const S::VI q = e < 16 ? S::AndI(S::WidenU8(qs + e), 0xF) : S::ShrI<4>(S::WidenU8(qs + e - 16));
  return S::Lut16(kIq4Grid, q);
}

// IQ4_XS sub-block ib's scale d * (ls - 32) (exact).
float Iq4XsScale(const std::byte* blk, int ib) {
  const auto* b = reinterpret_cast<const std::uint8_t*>(blk);
  const int scales_h = b[2] | (b[3] << 8);
  const int ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF) | (((scales_h >> (2 * ib)) & 3) << 4);
  return LoadHalf(blk) * static_cast<float>(ls - 32);
}

struct KindIQ4_NL {
  static constexpr int kBytes = 1;
  static V Load(const std::byte* row, std::int64_t k) {  // d * grid is exact
    const std::byte* blk = row + (k / 32) * kIq4NlBytes;
    return S::Mul(Iq4Values(reinterpret_cast<const std::uint8_t*>(blk + 2), static_cast<int>(k % 32)),
                  S::Set1(LoadHalf(blk)));
  }
  static float Scalar(const std::byte* row, std::int64_t k) {
    const std::byte* blk = row + (k / 32) * kIq4NlBytes;
    const int e = static_cast<int>(k % 32);
    const auto byte = static_cast<int>(blk[2 + e % 16]);
    return LoadHalf(blk) * kIq4Grid[e < 16 ? byte & 0xF : byte >> 4];
  }
};

struct KindIQ4_XS {
  static constexpr int kBytes = 1;
  static V Load(const std::byte* row, std::int64_t k) {  // (d * (ls - 32)) * grid, as ggml
    const std::byte* blk = row + (k / kQK) * kIq4XsBytes;
    const int e = static_cast<int>(k % kQK), ib = e / 32;
    const auto* qs = reinterpret_cast<const std::uint8_t*>(blk + 8) + 16 * ib;
    return S::Mul(S::Set1(Iq4XsScale(blk, ib)), Iq4Values(qs, e % 32));
  }
  static float Scalar(const std::byte* row, std::int64_t k) {
    const std::byte* blk = row + (k / kQK) * kIq4XsBytes;
    const int e = static_cast<int>(k % kQK), ib = e / 32, l = e % 32;
    const auto byte = static_cast<int>(blk[8 + 16 * ib + l % 16]);
    return Iq4XsScale(blk, ib) * kIq4Grid[l < 16 ? byte & 0xF : byte >> 4];
  }
};

// IQ4_NL / IQ4_XS: per 32 elements, scale * sum grid[q] x.
template <bool kXs, int R>
void DotRowsIq4(const std::byte* w, std::size_t row_bytes, std::int64_t cols, const float* x,
                float* y) {
  V acc[R];
  for (int i = 0; i < R; ++i) acc[i] = S::Zero();
  const std::int64_t n32 = cols / 32;
  for (std::int64_t g = 0; g < n32; ++g) {
    const float* xg = x + 32 * g;
    for (int i = 0; i < R; ++i) {
      const std::byte* blk;
      const std::uint8_t* qs;
      float scale;
      if constexpr (kXs) {
        blk = w + i * row_bytes + (g / 8) * kIq4XsBytes;
        qs = reinterpret_cast<const std::uint8_t*>(blk + 8) + 16 * (g % 8);
        scale = Iq4XsScale(blk, static_cast<int>(g % 8));
      } else {
        blk = w + i * row_bytes + g * kIq4NlBytes;
        qs = reinterpret_cast<const std::uint8_t*>(blk + 2);
        scale = LoadHalf(blk);
      }
      PrefetchAhead(blk, 0, row_bytes);
      V p = S::Zero();
      for (int e = 0; e < 32; e += L) p = S::Fma(Iq4Values(qs, e), S::Load(xg + e), p);
      acc[i] = S::Fma(p, S::Set1(scale), acc[i]);
    }
  }
  for (int i = 0; i < R; ++i) y[i] = S::ReduceAdd(acc[i]);
}
