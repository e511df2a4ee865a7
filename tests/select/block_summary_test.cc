// Block summaries: the bound holds for every key, quantization error, the wire format.
#include "select/block_summary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "test_util.h"

namespace smartgen::select {
namespace {

using testing::FillSequence;
using testing::RandomVector;

struct Case {
  kv::KvDType dtype;
  int head_dim;
  std::int64_t n_tokens;
};

class BlockSummaryTest : public ::testing::TestWithParam<Case> {};

// Exact max over the block's stored keys (as the attention kernel sees them) of q.k.
float ExactMax(const kv::SequenceKv& seq, int layer, int head, std::int32_t block,
               std::int64_t n_tokens, const float* q) {
  const kv::KvGeometry& g = seq.geometry();
  const kernels::KvBlockRef r = seq.Ref(layer, head, block);
  const std::int64_t rows =
      std::min<std::int64_t>(g.block_tokens, n_tokens - std::int64_t{block} * g.block_tokens);
  float best = -INFINITY;
  for (std::int64_t t = 0; t < rows; ++t) {
    float s = 0;
    for (int i = 0; i < g.head_dim; ++i) {
      const float k =
          g.dtype == kv::KvDType::kF32
              ? static_cast<const float*>(r.k)[t * g.head_dim + i]
              : kernels::F16ToF32(static_cast<const kernels::f16_t*>(r.k)[t * g.head_dim + i]);
      s += q[i] * k;
    }
    best = std::max(best, s);
  }
  return best;
}

TEST_P(BlockSummaryTest, UpperBoundCoversEveryKeyOfEveryBlock) {
  const Case c = GetParam();
  const kv::KvGeometry g{2, 3, c.head_dim, 16, c.dtype};
  kv::BlockPool pool(g, 1024);
  // Keys with channel scales that differ by 100x (outlier channels, as real keys have).
  std::vector<float> keys = RandomVector(std::size_t(2) * 3 * c.n_tokens * c.head_dim, 1);
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] *= (i % c.head_dim == 3) ? 30.0f : 0.3f;
  auto seq = FillSequence(&pool, c.n_tokens, keys, keys);
  ASSERT_NE(seq, nullptr);
  for (int layer = 0; layer < 2; ++layer) {
    const LayerSummaries s = LayerSummaries::Build(*seq, layer, c.n_tokens);
    ASSERT_EQ(s.n_blocks(), g.BlocksFor(c.n_tokens));
    for (int trial = 0; trial < 20; ++trial) {
      const int n_q = 1 + trial % 4;
      const std::vector<float> q = RandomVector(std::size_t(n_q) * c.head_dim, 100 + trial, 2.0f);
      for (int h = 0; h < 3; ++h) {
        std::vector<float> ub(s.n_blocks());
        s.UpperBounds(h, q.data(), n_q, ub.data());
        for (std::int32_t b = 0; b < s.n_blocks(); ++b) {
          float exact = -INFINITY, norm = 0;
          for (int j = 0; j < n_q; ++j) {
            exact =
                std::max(exact, ExactMax(*seq, layer, h, b, c.n_tokens, q.data() + j * c.head_dim));
            for (int i = 0; i < c.head_dim; ++i) norm += std::abs(q[j * c.head_dim + i]);
          }
          EXPECT_GE(ub[b], exact - 1e-5f * norm * 30)
              << "layer " << layer << " head " << h << " block " << b;
        }
      }
    }
  }
}

TEST_P(BlockSummaryTest, QuantizedBoundsAreOutwardAndWithinOneStep) {
  const Case c = GetParam();
  const kv::KvGeometry g{1, 2, c.head_dim, 16, c.dtype};
  kv::BlockPool pool(g, 1024);
  const std::vector<float> keys = RandomVector(std::size_t(2) * c.n_tokens * c.head_dim, 5);
  auto seq = FillSequence(&pool, c.n_tokens, keys, keys);
  const LayerSummaries s = LayerSummaries::Build(*seq, 0, c.n_tokens);
  for (int h = 0; h < 2; ++h) {
    for (std::int32_t b = 0; b < s.n_blocks(); ++b) {
      const std::int64_t rows = std::min<std::int64_t>(16, c.n_tokens - std::int64_t{b} * 16);
      for (int i = 0; i < c.head_dim; ++i) {
        float mn = INFINITY, mx = -INFINITY;
        for (std::int64_t t = 0; t < rows; ++t) {
          float k = keys[(std::size_t(h) * c.n_tokens + b * 16 + t) * c.head_dim + i];
          if (c.dtype == kv::KvDType::kF16) k = kernels::F16ToF32(kernels::F32ToF16(k));
          mn = std::min(mn, k);
          mx = std::max(mx, k);
        }
        const float step = s.scales(h)[i];
        EXPECT_LE(s.Min(h, b, i), mn);
        EXPECT_GE(s.Max(h, b, i), mx);
        EXPECT_LE(mn - s.Min(h, b, i), step * 1.001f);
        EXPECT_LE(s.Max(h, b, i) - mx, step * 1.001f);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, BlockSummaryTest,
                         ::testing::Values(Case{kv::KvDType::kF32, 64, 203},
                                           Case{kv::KvDType::kF16, 64, 203},
                                           Case{kv::KvDType::kF32, 8, 16},
                                           Case{kv::KvDType::kF16, 24, 37}));

LayerSummaries SampleSummaries() {
  const int d = 16;
  const std::int64_t n = 77;
  const std::vector<float> keys = RandomVector(std::size_t(3) * n * d, 9);
  return LayerSummaries::BuildFromKeys(4, 3, d, 16, n, keys);
}

TEST(BlockSummary, SerializeRoundTrips) {
  const LayerSummaries s = SampleSummaries();
  const std::vector<std::byte> bytes = s.Serialize();
  EXPECT_EQ(bytes.size(), s.serialized_bytes());
  auto back = LayerSummaries::Parse(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, s);
  EXPECT_EQ(back->layer(), 4);
  EXPECT_EQ(back->n_heads(), 3);
  EXPECT_EQ(back->n_blocks(), 5);
  EXPECT_EQ(back->n_tokens(), 77);
}

TEST(BlockSummary, RejectsShortCorruptAndForeignBuffers) {
  const std::vector<std::byte> good = SampleSummaries().Serialize();
  auto expect = [](std::vector<std::byte> b, StatusCode code, const char* needle) {
    auto r = LayerSummaries::Parse(b);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), code) << r.status().ToString();
    EXPECT_NE(r.status().ToString().find(needle), std::string::npos) << r.status().ToString();
  };
  expect({}, StatusCode::kDataLoss, "shorter than");
  expect(std::vector<std::byte>(good.begin(), good.begin() + 20), StatusCode::kDataLoss,
         "shorter than");
  expect(std::vector<std::byte>(good.begin(), good.end() - 1), StatusCode::kDataLoss,
         "header says");
  auto longer = good;
  longer.push_back(std::byte{0});
  expect(longer, StatusCode::kDataLoss, "header says");
  auto flipped = good;
  flipped[good.size() / 2] ^= std::byte{0x10};
  expect(flipped, StatusCode::kDataLoss, "checksum");
  auto magic = good;
  magic[0] = std::byte{'X'};
  expect(magic, StatusCode::kDataLoss, "magic");
  auto version = good;
  version[4] = std::byte{9};
  expect(version, StatusCode::kUnimplemented, "version 9");
  auto heads = good;
  heads[12] = std::byte{0};  // n_heads 0
  heads[13] = std::byte{0};
  expect(heads, StatusCode::kDataLoss, "implausible");
}

TEST(BlockSummary, SizeIsAboutThreePercentOfF16Kv) {
  // head_dim 64, 16-token blocks, 4096 tokens, 3 KV heads.
  const int d = 64, h = 3;
  const std::int64_t n = 4096;
  const LayerSummaries s =
      LayerSummaries::BuildFromKeys(0, h, d, 16, n, RandomVector(std::size_t(h) * n * d, 2));
  const double kv_bytes = 2.0 * n * h * d * 2;  // K and V, f16
  const double share = s.serialized_bytes() / kv_bytes;
  EXPECT_GT(share, 0.030);
  EXPECT_LT(share, 0.033);
}

TEST(BlockSummary, EmptyPromptHasNoBlocks) {
  const LayerSummaries s = LayerSummaries::BuildFromKeys(0, 2, 8, 16, 0, {});
  EXPECT_TRUE(s.empty());
  auto back = LayerSummaries::Parse(s.Serialize());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->empty());
}

}  // namespace
}  // namespace smartgen::select
