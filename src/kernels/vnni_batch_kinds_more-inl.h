// The batched VNNI kernels' kinds for the model-format issue's types (matmul_avx512vnni_batch.cc
// includes this file inside its anonymous namespace, after Unpacked, HalfAt and the Q4_K scale
// helpers). IQ4: levels plus 128 (offset 128); Q4_1 / Q5_1: q as stored, no offset, the min m
// entering as -m (the loop subtracts u.m times the token's block sum); Q5_K: Q4_K with the fifth
// bit; Q3_K: q + 4 hbit with an offset of 4 per half-block (Q6_K's shape); Q2_K: q as stored,
// scales and mins per half-block of 16, the mins against each token's half-block sums.
#ifndef SMARTGEN_VNNI_BATCH_KINDS
#error "include only from kernels/matmul_avx512vnni_batch.cc"
#endif

__m128i LevelTable() {
  return _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)),
                       _mm_set1_epi8(static_cast<char>(0x80)));
}

// 16 nibble bytes (low nibbles elements 0-15, high 16-31) as 32 levels plus 128 at v.
void UnpackLevels(const std::byte* qs, __m128i table, std::uint8_t* v) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)),
                low4 = _mm_set1_epi8(0x0F);
  _mm_store_si128(reinterpret_cast<__m128i*>(v), _mm_shuffle_epi8(table, _mm_and_si128(q, low4)));
  _mm_store_si128(reinterpret_cast<__m128i*>(v + 16),
                  _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(q, 4), low4)));
}

struct KindIq4Nl {
  static constexpr bool kSuper = false;
  static constexpr int kBlockBytes = 18, kUnit = 8, kShift = 7;
  static constexpr bool kHalves = false, kMins = false;
  static void Unpack(const std::byte* row, std::int64_t b0, int nbu, Unpacked* u) {
    const __m128i table = LevelTable();
    for (int j = 0; j < nbu; ++j) {
      const std::byte* blk = row + (b0 + j) * kBlockBytes;
      UnpackLevels(blk + 2, table, u->v + 32 * j);
      u->s[j] = HalfAt(blk);
    }
  }
};

struct KindIq4Xs {
  static constexpr bool kSuper = true;
  static constexpr int kBlockBytes = 136, kUnit = 8, kShift = 7;
  static constexpr bool kHalves = false, kMins = false;
  static void Unpack(const std::byte* row, std::int64_t b0, int /*nbu: 8*/, Unpacked* u) {
    const std::byte* blk = row + (b0 / 8) * kBlockBytes;
    const __m128i table = LevelTable();
    std::uint16_t sh;
    std::memcpy(&sh, blk + 2, 2);
    const float d = HalfAt(blk);
    for (int j = 0; j < 8; ++j) {
      UnpackLevels(blk + 8 + 16 * j, table, u->v + 32 * j);
      const int ls = ((std::to_integer<int>(blk[4 + j / 2]) >> (4 * (j % 2))) & 15) |
                     (((sh >> (2 * j)) & 3) << 4);
      u->s[j] = static_cast<float>(ls - 32) * d;
    }
  }
};

template <bool kFive>
struct KindMin {
  static constexpr bool kSuper = false;
  static constexpr int kBlockBytes = kFive ? 24 : 20, kUnit = 8, kShift = -1;
  static constexpr bool kHalves = false, kMins = true;
  static void Unpack(const std::byte* row, std::int64_t b0, int nbu, Unpacked* u) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), sixteen = _mm256_set1_epi8(16);
    for (int j = 0; j < nbu; ++j) {
      const std::byte* blk = row + (b0 + j) * kBlockBytes;
      const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + (kFive ? 8 : 4)));
      __m256i v = _mm256_and_si256(
          _mm256_inserti128_si256(_mm256_castsi128_si256(qs), _mm_srli_epi16(qs, 4), 1), low4);
      if constexpr (kFive) {
        std::uint32_t qh;
        std::memcpy(&qh, blk + 4, 4);
        v = _mm256_mask_add_epi8(v, qh, v, sixteen);
      }
      _mm256_store_si256(reinterpret_cast<__m256i*>(u->v + 32 * j), v);
      u->s[j] = HalfAt(blk);
      u->m[j] = -HalfAt(blk + 2);
    }
  }
};

struct KindQ5_K {
  static constexpr bool kSuper = true;
  static constexpr int kBlockBytes = 176, kUnit = 8, kShift = -1;
  static constexpr bool kHalves = false, kMins = true;
  static void Unpack(const std::byte* row, std::int64_t b0, int /*nbu: 8*/, Unpacked* u) {
    const std::byte* blk = row + (b0 / 8) * kBlockBytes;
    const __m256i low4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16));
    for (int g = 0; g < 4; ++g) {
      // Bit 2g of qh[l] is the fifth bit of element 64 g + l, bit 2g + 1 of element 64 g + 32 + l.
      const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 48 + 32 * g));
      const __m256i h0 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), one);
      const __m256i h1 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * g + 1), one);
      _mm256_store_si256(reinterpret_cast<__m256i*>(u->v + 64 * g),
                         _mm256_or_si256(_mm256_and_si256(qs, low4), _mm256_slli_epi16(h0, 4)));
      _mm256_store_si256(reinterpret_cast<__m256i*>(u->v + 64 * g + 32),
                         _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 4), low4),
                                         _mm256_slli_epi16(h1, 4)));
    }
    UnpackQ4KScales(blk, u);
  }
};

struct KindQ3_K {
  static constexpr bool kSuper = true;
  static constexpr int kBlockBytes = 110, kUnit = 8, kShift = 2;
  static constexpr bool kHalves = true, kMins = false;
  static void Unpack(const std::byte* row, std::int64_t b0, int /*nbu: 8*/, Unpacked* u) {
    const std::byte* blk = row + (b0 / 8) * kBlockBytes;
    const __m256i three = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk));
    for (int n = 0; n < 2; ++n) {
      const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 + 32 * n));
      for (int j = 0; j < 4; ++j) {
        // Element 128 n + 32 j + l: bits 2j of qs[32 n + l], high bit 4 n + j of hmask[l].
        const __m256i q = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), three);
        const __m256i h = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * n + j), one);
        _mm256_store_si256(reinterpret_cast<__m256i*>(u->v + 128 * n + 32 * j),
                           _mm256_or_si256(q, _mm256_slli_epi16(h, 2)));
      }
    }
    const float d = HalfAt(blk + 108);
    const auto* sc = reinterpret_cast<const std::uint8_t*>(blk + 96);
    for (int k = 0; k < 16; ++k) u->s[k] = static_cast<float>(Q3KScale(sc, k) - 32) * d;
  }
};

struct KindQ2_K {
  static constexpr bool kSuper = true;
  static constexpr int kBlockBytes = 84, kUnit = 8, kShift = -1;
  static constexpr bool kHalves = true, kMins = true;
  static void Unpack(const std::byte* row, std::int64_t b0, int /*nbu: 8*/, Unpacked* u) {
    const std::byte* blk = row + (b0 / 8) * kBlockBytes;
    const __m256i three = _mm256_set1_epi8(3);
    for (int n = 0; n < 2; ++n) {
      // Element 128 n + 32 j + l: bits 2j of qs[32 n + l].
      const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16 + 32 * n));
      for (int j = 0; j < 4; ++j) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(u->v + 128 * n + 32 * j),
                           _mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), three));
      }
    }
    const __m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk)));
    _mm512_storeu_ps(u->s,
                     _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_and_si512(sc, _mm512_set1_epi32(15))),
                                   _mm512_set1_ps(HalfAt(blk + 80))));
    _mm512_storeu_ps(u->m, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(sc, 4)),
                                         _mm512_set1_ps(HalfAt(blk + 82))));
  }
};
