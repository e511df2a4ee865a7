// Sliding-window masking and logit soft-capping of the attention kernels (attention.h): the
// reference against hand-truncated key lists and hand-computed weights, and every kernel table
// (decode and causal prefill) against the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/attention.h"
#include "kernels/fp16.h"

namespace smartgen::kernels {
namespace {

// One KV head of n_tokens f32 keys/values in blocks of `block` tokens from position 0.
struct WindowCache {
  std::vector<float> k, v;
  std::vector<KvBlockRef> blocks;
};

WindowCache MakeWindowCache(std::mt19937& rng, int hd, std::int64_t n_tokens, int block) {
  WindowCache c;
  c.k = testing::RandomVector(rng, n_tokens * hd, -2.0f, 2.0f);
  c.v = testing::RandomVector(rng, n_tokens * hd);
  for (std::int64_t t0 = 0; t0 < n_tokens; t0 += block) {
    c.blocks.push_back(KvBlockRef{
        .k = c.k.data() + t0 * hd,
        .v = c.v.data() + t0 * hd,
        .n_tokens = static_cast<std::int32_t>(std::min<std::int64_t>(block, n_tokens - t0)),
        .first_pos = t0});
  }
  return c;
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - b[i]));
  return d;
}

TEST(AttentionWindow, ReferenceEqualsKeysTruncatedToTheWindow) {
  std::mt19937 rng(11);
  const int hd = 32, nq = 2, window = 21;
  WindowCache c = MakeWindowCache(rng, hd, 100, 16);
  const std::vector<float> q = testing::RandomVector(rng, nq * hd, -3.0f, 3.0f);
  AttentionParams p{hd, nq, 1.0f / std::sqrt(float(hd)), KvDType::kF32};
  AttentionParams pw = p;
  pw.window = window;
  for (std::int64_t q_pos : {0, 5, 20, 21, 22, 47, 99}) {
    std::vector<KvBlockRef> kept;  // keys at (q_pos - window, q_pos], cut by hand
    for (KvBlockRef b : c.blocks) {
      const std::int64_t lo = std::max<std::int64_t>(b.first_pos, q_pos - window + 1);
      const std::int64_t hi = std::min<std::int64_t>(b.first_pos + b.n_tokens - 1, q_pos);
      if (lo > hi) continue;
      const std::int64_t skip = lo - b.first_pos;
      kept.push_back({static_cast<const float*>(b.k) + skip * hd,
                      static_cast<const float*>(b.v) + skip * hd,
                      static_cast<std::int32_t>(hi - lo + 1), lo});
    }
    std::vector<float> want(nq * hd), want_lse(nq), got(nq * hd), got_lse(nq);
    AttendBlocksReference(p, q.data(), q_pos, kept, want.data(), want_lse.data());
    AttendBlocksReference(pw, q.data(), q_pos, c.blocks, got.data(), got_lse.data());
    EXPECT_LT(MaxAbsDiff(got, want), 1e-6) << "q_pos " << q_pos;
    EXPECT_NEAR(got_lse[0], want_lse[0], 1e-5) << "q_pos " << q_pos;
    // Without the window the answer differs once keys fall out of it.
    if (q_pos >= window) {
      AttendBlocksReference(p, q.data(), q_pos, c.blocks, got.data(), got_lse.data());
      EXPECT_GT(MaxAbsDiff(got, want), 1e-3) << "q_pos " << q_pos;
    }
  }
}

TEST(AttentionWindow, SoftCapTransformsScoresBeforeTheSoftmax) {
  // Two keys, one query head: the weights are softmax(cap * tanh(scale * q.k / cap)).
  const int hd = 16;
  std::vector<float> k(2 * hd, 0.0f), v(2 * hd, 0.0f), q(hd, 0.0f);
  q[0] = 10.0f;
  k[0] = 3.0f;        // score 30 * scale
  k[hd] = -2.0f;      // score -20 * scale
  v[1] = 1.0f;        // value of key 0: e_1
  v[hd + 2] = 1.0f;   // value of key 1: e_2
  const KvBlockRef b{k.data(), v.data(), 2, 0};
  AttentionParams p{hd, 1, 0.5f, KvDType::kF32};
  p.softcap = 5.0f;
  const double s0 = 5.0 * std::tanh(15.0 / 5.0), s1 = 5.0 * std::tanh(-10.0 / 5.0);
  const double w0 = 1.0 / (1.0 + std::exp(s1 - s0));
  std::vector<float> out(hd);
  float lse;
  AttendBlocksReference(p, q.data(), 1, std::span(&b, 1), out.data(), &lse);
  EXPECT_NEAR(out[1], w0, 1e-6);
  EXPECT_NEAR(out[2], 1.0 - w0, 1e-6);
  EXPECT_NEAR(lse, std::log(std::exp(s0) + std::exp(s1)), 1e-5);
  for (const auto* table : testing::AvailableTables()) {
    std::vector<float> o(hd);
    float l;
    table->attend_blocks(p, q.data(), 1, &b, 1, o.data(), &l);
    EXPECT_NEAR(o[1], w0, 1e-5) << internal::IsaName(table->isa);
    EXPECT_NEAR(l, lse, 1e-5) << internal::IsaName(table->isa);
  }
}

// Every table's decode and causal prefill with a window and soft-capping equal the reference.
TEST(AttentionWindow, EveryIsaMatchesReferenceInDecodeAndPrefill) {
  std::mt19937 rng(12);
  struct Case {
    int hd, nq, block, window;
    float softcap;
    std::int64_t n_ctx, n_new;
  };
  for (const Case& cs : {Case{64, 3, 16, 40, 0.0f, 30, 90}, Case{32, 2, 16, 64, 50.0f, 0, 150},
                         Case{48, 2, 7, 5, 0.0f, 11, 37}, Case{64, 1, 16, 1, 0.0f, 3, 20},
                         Case{16, 4, 16, 200, 20.0f, 16, 40},
                         // 128 dims: the one-pass decode kernel (the others take three passes).
                         Case{128, 2, 16, 24, 30.0f, 10, 40}}) {
    for (KvDType dtype : {KvDType::kF32, KvDType::kF16}) {
      WindowCache base = MakeWindowCache(rng, cs.hd, cs.n_ctx + cs.n_new, cs.block);
      // f16 caches: the same values rounded (the kernels convert on load).
      std::vector<f16_t> k16(base.k.size()), v16(base.v.size());
      std::vector<KvBlockRef> blocks = base.blocks;
      if (dtype == KvDType::kF16) {
        for (std::size_t i = 0; i < base.k.size(); ++i) {
          k16[i] = F32ToF16(base.k[i]);
          v16[i] = F32ToF16(base.v[i]);
        }
        for (KvBlockRef& b : blocks) {
          b.k = k16.data() + b.first_pos * cs.hd;
          b.v = v16.data() + b.first_pos * cs.hd;
        }
      }
      AttentionParams p{cs.hd, cs.nq, 1.0f / std::sqrt(float(cs.hd)), dtype};
      p.window = cs.window;
      p.softcap = cs.softcap;
      const std::int64_t stride = cs.nq * cs.hd;
      const std::vector<float> q = testing::RandomVector(rng, cs.n_new * stride, -3.0f, 3.0f);
      std::vector<float> want(cs.n_new * stride), want_lse(cs.n_new * cs.nq);
      for (std::int64_t t = 0; t < cs.n_new; ++t) {
        AttendBlocksReference(p, q.data() + t * stride, cs.n_ctx + t, blocks,
                              want.data() + t * stride, want_lse.data() + t * cs.nq);
      }
      for (const auto* table : testing::AvailableTables()) {
        const std::string what = std::string(internal::IsaName(table->isa)) + " window " +
                                 std::to_string(cs.window) + " hd " + std::to_string(cs.hd);
        std::vector<float> out(cs.n_new * stride), lse(cs.n_new * cs.nq);
        table->attend_causal(p, q.data(), stride, cs.n_new, cs.n_ctx, blocks.data(),
                             blocks.size(), out.data(), stride, lse.data());
        EXPECT_LT(MaxAbsDiff(out, want), 2e-5) << what << " prefill";
        EXPECT_LT(MaxAbsDiff(lse, want_lse), 2e-4) << what << " prefill lse";
        std::vector<float> dec(cs.n_new * stride), dec_lse(cs.n_new * cs.nq);
        for (std::int64_t t = 0; t < cs.n_new; ++t) {
          table->attend_blocks(p, q.data() + t * stride, cs.n_ctx + t, blocks.data(),
                               blocks.size(), dec.data() + t * stride, dec_lse.data() + t * cs.nq);
        }
        EXPECT_LT(MaxAbsDiff(dec, want), 2e-5) << what << " decode";
        EXPECT_LT(MaxAbsDiff(dec_lse, want_lse), 2e-4) << what << " decode lse";
      }
    }
  }
}

}  // namespace
}  // namespace smartgen::kernels
