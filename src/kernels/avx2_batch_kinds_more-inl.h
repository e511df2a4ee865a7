// The AVX2 batched kernels' kinds for Q4_1, Q5_1, Q2_K and Q3_K (matmul_avx2_batch.cc includes
// this file inside its anonymous namespace, after Unpacked, NibbleValues and the other helpers),
// the VNNI panels' kinds (vnni_batch_kinds_more-inl.h) with AVX2 unpacking. Q4_1 / Q5_1: q as
// stored (0..15, 0..31), no offset, the min m entering as -m (the loop subtracts u.m times the
// token's d_x sum(q)); Q3_K: q + 4 hbit (0..7) with an offset of 4 per half-block (Q6_K's shape);
// Q2_K: q as stored (0..3), scales and mins per half-block of 16, the mins against each token's
// half-block sums. kSum16Groups as in matmul_avx2_batch.cc: 2 * max value * 127 * groups < 32768.
#ifndef SMARTGEN_AVX2_BATCH_KINDS
#error "include only from kernels/matmul_avx2_batch.cc"
#endif

template <bool kFive>
struct KindMin {
  static constexpr bool kSuper = false;
  static constexpr int kBlockBytes = kFive ? 24 : 20, kShift = -1;
  static constexpr bool kHalves = false, kMins = true;
  static constexpr int kSum16Groups = kFive ? 4 : 8;
  static void Unpack(const std::byte* unit, int nbu, Unpacked* u) {
    for (int j = 0; j < nbu; ++j) {
      const std::byte* blk = unit + j * kBlockBytes;  // d, m, [qh[4]], qs[16]
      _mm256_store_si256(reinterpret_cast<__m256i*>(u->v + 32 * j),
                         NibbleValues<kFive>(blk, kFive ? 8 : 4, 4));
      u->s[j] = HalfAt(blk);
      u->m[j] = -HalfAt(blk + 2);
    }
  }
};

// The 16 byte-sized values of q (8 at a time) times d, as floats at out.
void ScaleBytes(__m128i q, bool is_signed, float d, float* out) {
  const __m256 dv = _mm256_set1_ps(d);
  for (int h = 0; h < 2; ++h) {
    const __m128i part = h == 0 ? q : _mm_srli_si128(q, 8);
    const __m256i wide = is_signed ? _mm256_cvtepi8_epi32(part) : _mm256_cvtepu8_epi32(part);
    _mm256_storeu_ps(out + 8 * h, _mm256_mul_ps(_mm256_cvtepi32_ps(wide), dv));
  }
}

struct KindQ3_K {
  static constexpr bool kSuper = true;
  static constexpr int kBlockBytes = 110, kShift = 2;
  static constexpr bool kHalves = true, kMins = false;
  static constexpr int kSum16Groups = 4;
  static void Unpack(const std::byte* blk, int /*nbu: 8*/, Unpacked* u) {
    const __m256i three = _mm256_set1_epi8(3);
    const __m256i hm = Load32(blk);  // hmask[32], qs[64], scales[12], d
    for (int n = 0; n < 2; ++n) {
      const __m256i qs = Load32(blk + 32 + 32 * n);
      for (int j = 0; j < 4; ++j) {
        // Element 128 n + 32 j + l: bits 2j of qs[32 n + l], high bit 4 n + j of hmask[l].
        const __m256i q = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), three);
        _mm256_store_si256(reinterpret_cast<__m256i*>(u->v + 128 * n + 32 * j),
                           _mm256_or_si256(q, ByteBit(hm, 4 * n + j, 2)));
      }
    }
    ScaleBytes(Q3Scales(blk + 96), true, HalfAt(blk + 108), u->s);
  }
};

struct KindQ2_K {
  static constexpr bool kSuper = true;
  static constexpr int kBlockBytes = 84, kShift = -1;
  static constexpr bool kHalves = true, kMins = true;
  static constexpr int kSum16Groups = 4;
  static void Unpack(const std::byte* blk, int /*nbu: 8*/, Unpacked* u) {
    const __m256i three = _mm256_set1_epi8(3);
    for (int n = 0; n < 2; ++n) {  // scales[16], qs[64], d, dmin
      // Element 128 n + 32 j + l: bits 2j of qs[32 n + l].
      const __m256i qs = Load32(blk + 16 + 32 * n);
      for (int j = 0; j < 4; ++j) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(u->v + 128 * n + 32 * j),
                           _mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), three));
      }
    }
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk));
    const __m128i low4 = _mm_set1_epi8(0x0F);
    ScaleBytes(_mm_and_si128(sc, low4), false, HalfAt(blk + 80), u->s);
    ScaleBytes(_mm_and_si128(_mm_srli_epi16(sc, 4), low4), false, HalfAt(blk + 82), u->m);
  }
};
