#include "node/decode/head_attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/fp16.h"

namespace smartgen::node {
namespace {

// One KV head's cache of `n_tokens` f16 rows cut into blocks of `block` tokens.
struct HeadCache {
  std::vector<kernels::f16_t> k, v;
  std::vector<kernels::KvBlockRef> blocks;
};

HeadCache MakeHead(std::mt19937& rng, int head_dim, std::int64_t n_tokens, int block) {
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  HeadCache c;
  for (std::int64_t i = 0; i < n_tokens * head_dim; ++i) {
    c.k.push_back(kernels::F32ToF16(u(rng)));
    c.v.push_back(kernels::F32ToF16(u(rng)));
  }
  for (std::int64_t t0 = 0; t0 < n_tokens; t0 += block) {
    c.blocks.push_back(
        {.k = c.k.data() + t0 * head_dim,
         .v = c.v.data() + t0 * head_dim,
         .n_tokens = static_cast<std::int32_t>(std::min<std::int64_t>(block, n_tokens - t0)),
         .first_pos = t0});
  }
  return c;
}

// The pool's split-and-merge result equals one scalar reference pass per head, for heads of
// different lengths (one empty), below and above the inline threshold.
TEST(HeadAttention, SplitOverThePoolEqualsOneReferencePassPerHead) {
  constexpr int kHeads = 3, kGroup = 3, kDim = 64, kBlock = 16;
  std::mt19937 rng(7);
  core::ThreadPool pool(2);
  HeadAttention heads(kHeads, kGroup, kDim);
  const kernels::AttentionParams p{
      .head_dim = kDim, .n_q = kGroup, .scale = 0.125f, .dtype = kernels::KvDType::kF16};
  for (std::int64_t n_tokens : {std::int64_t{40}, std::int64_t{1000}, std::int64_t{4096 + 9}}) {
    std::vector<HeadCache> caches;
    std::vector<std::vector<kernels::KvBlockRef>> refs(kHeads);
    for (int h = 0; h < kHeads; ++h) {
      caches.push_back(MakeHead(rng, kDim, h == 2 ? 0 : n_tokens / (h + 1), kBlock));
      refs[h] = caches.back().blocks;
    }
    std::uniform_real_distribution<float> u(-3.0f, 3.0f);
    std::vector<float> q(kHeads * kGroup * kDim);
    for (float& x : q) x = u(rng);
    const std::int64_t pos = n_tokens + 2;
    for (core::ThreadPool* used : {static_cast<core::ThreadPool*>(nullptr), &pool}) {
      std::vector<float> out(q.size(), 99.0f), lse(kHeads * kGroup, 99.0f);
      heads.Run(used, p, q.data(), pos, refs, out.data(), lse.data());
      for (int h = 0; h < kHeads; ++h) {
        std::vector<float> want(kGroup * kDim), want_lse(kGroup);
        kernels::AttendBlocksReference(p, q.data() + h * kGroup * kDim, pos, refs[h], want.data(),
                                       want_lse.data());
        for (int j = 0; j < kGroup; ++j) {
          if (refs[h].empty()) {
            EXPECT_EQ(lse[h * kGroup + j], kernels::kNoKeysLse);
          } else {
            EXPECT_NEAR(lse[h * kGroup + j], want_lse[j],
                        1e-4f * std::max(1.0f, std::fabs(want_lse[j])));
          }
          for (int i = 0; i < kDim; ++i) {
            EXPECT_NEAR(out[(h * kGroup + j) * kDim + i], want[j * kDim + i], 1e-4f)
                << "tokens " << n_tokens << " head " << h << (used ? " pool" : " inline");
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace smartgen::node
