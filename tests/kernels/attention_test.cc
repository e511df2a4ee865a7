#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/fp16.h"
#include "kernels/lse_merge.h"

namespace smartgen::kernels {
namespace {

// A KV cache of one KV head cut into blocks of `block` tokens (the last one partial).
struct Cache {
  AttentionParams p;
  std::vector<std::byte> k, v;
  std::vector<KvBlockRef> blocks;
};

Cache MakeCache(std::mt19937& rng, int head_dim, int n_q, KvDType dtype, std::int64_t n_tokens,
                int block, std::int64_t first_pos = 0) {
  Cache c;
  c.p = AttentionParams{.head_dim = head_dim,
                        .n_q = n_q,
                        .scale = 1.0f / std::sqrt(static_cast<float>(head_dim)),
                        .dtype = dtype};
  const std::size_t elem = KvDTypeSize(dtype);
  c.k.resize(n_tokens * head_dim * elem);
  c.v.resize(n_tokens * head_dim * elem);
  std::vector<float> kf = testing::RandomVector(rng, n_tokens * head_dim, -2.0f, 2.0f);
  std::vector<float> vf = testing::RandomVector(rng, n_tokens * head_dim);
  for (std::size_t i = 0; i < kf.size(); ++i) {
    if (dtype == KvDType::kF32) {
      reinterpret_cast<float*>(c.k.data())[i] = kf[i];
      reinterpret_cast<float*>(c.v.data())[i] = vf[i];
    } else {
      reinterpret_cast<f16_t*>(c.k.data())[i] = F32ToF16(kf[i]);
      reinterpret_cast<f16_t*>(c.v.data())[i] = F32ToF16(vf[i]);
    }
  }
  for (std::int64_t t0 = 0; t0 < n_tokens; t0 += block) {
    const std::size_t off = t0 * head_dim * elem;
    c.blocks.push_back(KvBlockRef{
        .k = c.k.data() + off,
        .v = c.v.data() + off,
        .n_tokens = static_cast<std::int32_t>(std::min<std::int64_t>(block, n_tokens - t0)),
        .first_pos = first_pos + t0});
  }
  return c;
}

// max |a - b| over a head, relative to the largest |b| of that head.
double HeadRelError(const float* a, const float* b, int n) {
  double diff = 0.0, mag = 1e-30;
  for (int i = 0; i < n; ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    mag = std::max(mag, std::fabs(static_cast<double>(b[i])));
  }
  return diff / mag;
}

void ExpectMatches(const AttentionParams& p, const float* out, const float* lse,
                   const float* want_out, const float* want_lse, double tol,
                   const std::string& what) {
  for (int h = 0; h < p.n_q; ++h) {
    EXPECT_LT(HeadRelError(out + h * p.head_dim, want_out + h * p.head_dim, p.head_dim), tol)
        << what << " head " << h;
    EXPECT_NEAR(lse[h], want_lse[h], tol * std::max(1.0f, std::fabs(want_lse[h])))
        << what << " head " << h;
  }
}

struct Case {
  int head_dim, n_q, block;
  std::int64_t n_tokens;
};
const Case kCases[] = {{64, 3, 16, 16 * 7 + 5}, {64, 1, 16, 16 * 9},     {128, 4, 16, 33},
                       {32, 2, 5, 5 * 13 + 1},  {80, 3, 7, 7 * 3 + 6},   {64, 6, 16, 1},
                       {16, 1, 3, 3 * 5 + 2},   {64, 3, 16, 16 * 64 + 9}};

TEST(Attention, BlocksMergedInAnyOrderEqualDense) {
  std::mt19937 rng(1);
  for (KvDType dtype : {KvDType::kF32, KvDType::kF16}) {
    for (const Case& cs : kCases) {
      Cache c = MakeCache(rng, cs.head_dim, cs.n_q, dtype, cs.n_tokens, cs.block);
      const int hd = cs.head_dim, nq = cs.n_q;
      std::vector<float> q = testing::RandomVector(rng, nq * hd, -3.0f, 3.0f);
      const std::int64_t q_pos = cs.n_tokens + 3;  // decode: after every key
      std::vector<float> want(nq * hd), want_lse(nq);
      AttendBlocksReference(c.p, q.data(), q_pos, c.blocks, want.data(), want_lse.data());
      for (const auto* table : testing::AvailableTables()) {
        const std::string what = std::string(internal::IsaName(table->isa)) +
                                 (dtype == KvDType::kF16 ? " f16" : " f32") + " hd " +
                                 std::to_string(hd) + " tokens " + std::to_string(cs.n_tokens);
        // All blocks at once.
        std::vector<float> out(nq * hd), lse(nq);
        table->attend_blocks(c.p, q.data(), q_pos, c.blocks.data(), c.blocks.size(), out.data(),
                             lse.data());
        ExpectMatches(c.p, out.data(), lse.data(), want.data(), want_lse.data(), 1e-5,
                      what + " dense");
        // One block at a time, merged in a random order, starting from the empty result.
        std::vector<std::size_t> order(c.blocks.size());
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng);
        std::vector<float> acc(nq * hd, 0.0f), acc_lse(nq, kNoKeysLse);
        std::vector<float> part(nq * hd), part_lse(nq);
        for (std::size_t bi : order) {
          table->attend_blocks(c.p, q.data(), q_pos, &c.blocks[bi], 1, part.data(),
                               part_lse.data());
          for (int h = 0; h < nq; ++h) {
            LseMergeInto(hd, acc.data() + h * hd, &acc_lse[h], part.data() + h * hd, part_lse[h]);
          }
        }
        ExpectMatches(c.p, acc.data(), acc_lse.data(), want.data(), want_lse.data(), 1e-5,
                      what + " merged");
        // A random split into two sets, each attended as a list, merged B into A.
        std::vector<KvBlockRef> a, b;
        for (const KvBlockRef& blk : c.blocks) (rng() & 1 ? a : b).push_back(blk);
        std::vector<float> oa(nq * hd), la(nq), ob(nq * hd), lb(nq);
        table->attend_blocks(c.p, q.data(), q_pos, a.data(), a.size(), oa.data(), la.data());
        table->attend_blocks(c.p, q.data(), q_pos, b.data(), b.size(), ob.data(), lb.data());
        for (int h = 0; h < nq; ++h) {
          LseMergeInto(hd, oa.data() + h * hd, &la[h], ob.data() + h * hd, lb[h]);
        }
        ExpectMatches(c.p, oa.data(), la.data(), want.data(), want_lse.data(), 1e-5,
                      what + " split");
      }
    }
  }
}

TEST(Attention, MasksKeysAfterTheQueryPosition) {
  std::mt19937 rng(2);
  for (KvDType dtype : {KvDType::kF32, KvDType::kF16}) {
    Cache c = MakeCache(rng, 64, 3, dtype, 16 * 5 + 3, 16, /*first_pos=*/100);
    std::vector<float> q = testing::RandomVector(rng, 3 * 64, -3.0f, 3.0f);
    for (std::int64_t q_pos : {100, 101, 115, 116, 150, 182, 183, 500}) {
      // Truncate the blocks by hand to the keys at positions <= q_pos.
      std::vector<KvBlockRef> visible;
      for (KvBlockRef b : c.blocks) {
        b.n_tokens = static_cast<std::int32_t>(
            std::clamp<std::int64_t>(q_pos - b.first_pos + 1, 0, b.n_tokens));
        if (b.n_tokens > 0) visible.push_back(b);
      }
      std::vector<float> want(3 * 64), want_lse(3);
      AttendBlocksReference(c.p, q.data(), q_pos, visible, want.data(), want_lse.data());
      // The reference itself masks: same answer from the untruncated list.
      std::vector<float> ref2(3 * 64), ref2_lse(3);
      AttendBlocksReference(c.p, q.data(), q_pos, c.blocks, ref2.data(), ref2_lse.data());
      ExpectMatches(c.p, ref2.data(), ref2_lse.data(), want.data(), want_lse.data(), 1e-6,
                    "reference");
      for (const auto* table : testing::AvailableTables()) {
        std::vector<float> out(3 * 64), lse(3);
        table->attend_blocks(c.p, q.data(), q_pos, c.blocks.data(), c.blocks.size(), out.data(),
                             lse.data());
        ExpectMatches(
            c.p, out.data(), lse.data(), want.data(), want_lse.data(), 1e-5,
            std::string(internal::IsaName(table->isa)) + " q_pos " + std::to_string(q_pos));
      }
    }
  }
}

TEST(Attention, NoKeysGivesZeroOutputAndMinusInfLse) {
  std::mt19937 rng(3);
  Cache c = MakeCache(rng, 64, 2, KvDType::kF32, 16, 16, /*first_pos=*/50);
  std::vector<float> q = testing::RandomVector(rng, 2 * 64);
  for (const auto* table : testing::AvailableTables()) {
    std::vector<float> out(2 * 64, 7.0f), lse(2, 7.0f);
    table->attend_blocks(c.p, q.data(), 10, nullptr, 0, out.data(), lse.data());
    for (float x : out) EXPECT_EQ(x, 0.0f);
    for (float x : lse) EXPECT_EQ(x, kNoKeysLse);
    // Every key in the future: same as no keys.
    std::fill(out.begin(), out.end(), 7.0f);
    table->attend_blocks(c.p, q.data(), 49, c.blocks.data(), c.blocks.size(), out.data(),
                         lse.data());
    for (float x : out) EXPECT_EQ(x, 0.0f);
    for (float x : lse) EXPECT_EQ(x, kNoKeysLse);
  }
  std::vector<float> out(2 * 64, 7.0f), lse(2, 7.0f);
  AttendBlocksReference(c.p, q.data(), 10, {}, out.data(), lse.data());
  for (float x : out) EXPECT_EQ(x, 0.0f);
  for (float x : lse) EXPECT_EQ(x, kNoKeysLse);
}

TEST(Attention, CausalPrefillEqualsPerTokenDecode) {
  std::mt19937 rng(4);
  for (KvDType dtype : {KvDType::kF32, KvDType::kF16}) {
    for (auto [hd, nq, n_ctx, n_new] : {std::tuple{64, 3, 37, 45},
                                        {64, 1, 0, 70},
                                        {32, 4, 16, 1},
                                        {128, 2, 100, 33},
                                        {64, 3, 0, 200}}) {
      // Keys: n_ctx earlier tokens then the n_new tokens being prefilled, in blocks of 16.
      Cache c = MakeCache(rng, hd, nq, dtype, n_ctx + n_new, 16, /*first_pos=*/0);
      const std::int64_t q_stride = nq * hd + 5, out_stride = nq * hd + 3;  // padded rows
      std::vector<float> q = testing::RandomVector(rng, n_new * q_stride, -3.0f, 3.0f);
      std::vector<float> want(n_new * out_stride), want_lse(n_new * nq);
      for (std::int64_t t = 0; t < n_new; ++t) {
        AttendBlocksReference(c.p, q.data() + t * q_stride, n_ctx + t, c.blocks,
                              want.data() + t * out_stride, want_lse.data() + t * nq);
      }
      for (const auto* table : testing::AvailableTables()) {
        std::vector<float> out(n_new * out_stride), lse(n_new * nq);
        table->attend_causal(c.p, q.data(), q_stride, n_new, n_ctx, c.blocks.data(),
                             c.blocks.size(), out.data(), out_stride, lse.data());
        for (std::int64_t t = 0; t < n_new; ++t) {
          ExpectMatches(c.p, out.data() + t * out_stride, lse.data() + t * nq,
                        want.data() + t * out_stride, want_lse.data() + t * nq, 1e-5,
                        std::string(internal::IsaName(table->isa)) + " token " + std::to_string(t));
        }
        // lse may be omitted.
        std::vector<float> out2(n_new * out_stride);
        table->attend_causal(c.p, q.data(), q_stride, n_new, n_ctx, c.blocks.data(),
                             c.blocks.size(), out2.data(), out_stride, nullptr);
        for (std::int64_t t = 0; t < n_new; ++t) {
          for (int i = 0; i < nq * hd; ++i) {
            ASSERT_EQ(out2[t * out_stride + i], out[t * out_stride + i]);
          }
        }
      }
    }
  }
}

TEST(LseMerge, EmptySidesAndTwoSingleKeys) {
  float o_a[2] = {1.0f, 2.0f}, lse_a = kNoKeysLse;
  const float o_b[2] = {3.0f, 4.0f};
  LseMergeInto(2, o_a, &lse_a, o_b, 0.5f);  // empty A takes B
  EXPECT_EQ(o_a[0], 3.0f);
  EXPECT_EQ(o_a[1], 4.0f);
  EXPECT_EQ(lse_a, 0.5f);
  LseMergeInto(2, o_a, &lse_a, o_b, kNoKeysLse);  // empty B changes nothing
  EXPECT_EQ(o_a[0], 3.0f);
  EXPECT_EQ(lse_a, 0.5f);
  float z[2] = {0.0f, 0.0f}, lz = kNoKeysLse;
  LseMergeInto(2, z, &lz, z, kNoKeysLse);  // both empty
  EXPECT_EQ(lz, kNoKeysLse);
  EXPECT_EQ(z[0], 0.0f);
  // Two single keys with scores 1 and 2 and values 10 and 20.
  float o1[1] = {10.0f}, l1 = 1.0f;
  const float o2[1] = {20.0f};
  LseMergeInto(1, o1, &l1, o2, 2.0f);
  const double w1 = std::exp(1.0), w2 = std::exp(2.0);
  EXPECT_NEAR(o1[0], (10 * w1 + 20 * w2) / (w1 + w2), 1e-5);
  EXPECT_NEAR(l1, std::log(w1 + w2), 1e-6);
}

}  // namespace
}  // namespace smartgen::kernels
