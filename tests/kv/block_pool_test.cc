#include "kv/block_pool.h"

#include <cstring>
#include <set>

#include <gtest/gtest.h>

#include "kernels/fp16.h"
#include "kv/sequence_kv.h"

namespace smartgen::kv {
namespace {

KvGeometry SmallGeometry(KvDType dtype = KvDType::kF16) {
  return {/*n_layers=*/2, /*n_kv_heads=*/3, /*head_dim=*/8, /*block_tokens=*/4, dtype};
}

TEST(KvGeometry, SizesFollowTheLayout) {
  const KvGeometry g = SmallGeometry();
  EXPECT_EQ(g.row_bytes(), 16u);
  EXPECT_EQ(g.half_block_bytes(), 64u);
  EXPECT_EQ(g.block_bytes(), 128u);
  EXPECT_EQ(g.bytes_per_token(), 2u * 16 * 2 * 3);
  EXPECT_EQ(g.BlocksFor(0), 0);
  EXPECT_EQ(g.BlocksFor(4), 1);
  EXPECT_EQ(g.BlocksFor(5), 2);
  // The SmolLM2-135M figure of DESIGN.md: 23 KiB per token in f16.
  const KvGeometry smol{30, 3, 64, 16, KvDType::kF16};
  EXPECT_EQ(smol.bytes_per_token(), 23040u);
  EXPECT_EQ(smol.block_bytes(), 4096u);
}

TEST(BlockPool, AllocatesDistinctZeroedBlocksAndRefusesPastCapacity) {
  BlockPool pool(SmallGeometry(), 2500);
  std::vector<BlockId> a;
  ASSERT_TRUE(pool.Allocate(2000, &a).ok());
  std::set<BlockId> unique(a.begin(), a.end());
  EXPECT_EQ(unique.size(), 2000u);
  std::memset(pool.Data(a[5]), 0xab, pool.geometry().block_bytes());
  std::vector<BlockId> b;
  const Status full = pool.Allocate(501, &b);
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(pool.used(), 2000);
  pool.Free(a);
  EXPECT_EQ(pool.used(), 0);
  ASSERT_TRUE(pool.Allocate(2500, &b).ok());
  for (BlockId id : b) {
    const std::byte* d = pool.Data(id);
    for (std::size_t i = 0; i < pool.geometry().block_bytes(); ++i) {
      ASSERT_EQ(d[i], std::byte{0}) << "block " << id << " not zeroed";
    }
  }
}

TEST(BlockPool, PrefaultAllocatesTheFirstBlocksStorageUpFrontAndCapsAtCapacity) {
  BlockPool pool(SmallGeometry(), 2500);
  EXPECT_EQ(pool.allocated(), 0);  // lazily allocated
  // Storage comes in whole chunks: 1500 blocks take the first two.
  const std::int64_t resident = pool.Prefault(1500);
  EXPECT_GE(resident, 1500);
  EXPECT_EQ(pool.allocated(), resident);
  EXPECT_EQ(pool.used(), 0);  // prefaulted blocks are free
  std::vector<BlockId> a;
  ASSERT_TRUE(pool.Allocate(1500, &a).ok());
  EXPECT_EQ(pool.allocated(), resident);  // no growth for blocks already there
  for (BlockId id : a) ASSERT_LT(id, resident);
  EXPECT_EQ(pool.Prefault(1 << 20), 2500);  // capped at the capacity
  EXPECT_EQ(pool.allocated(), 2500);
  std::vector<BlockId> b;
  ASSERT_TRUE(pool.Allocate(1000, &b).ok());
  EXPECT_EQ(pool.Allocate(1, &b).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(pool.Prefault(0), 0);
}

TEST(SequenceKv, EveryTableLiesAtRisingAddressesWhateverWasFreedBefore) {
  // A sequence freed table by table, then a new one: its blocks of each (layer, head) still
  // come in ascending order (the attention reads them as one forward stream), for the second,
  // third, ... request alike, not descending every other time as a plain free stack gives.
  const KvGeometry g = SmallGeometry();
  BlockPool pool(g, 4000);
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    SequenceKv seq(&pool);
    ASSERT_TRUE(seq.Reserve(64).ok());
    for (int l = 0; l < g.n_layers; ++l) {
      for (int h = 0; h < g.n_kv_heads; ++h) {
        for (std::int64_t b = 1; b < seq.n_blocks(); ++b) {
          ASSERT_LT(seq.block_id(l, h, b - 1), seq.block_id(l, h, b)) << l << " " << h << " " << b;
        }
      }
    }
  }
  EXPECT_EQ(pool.used(), 0);
}

TEST(SequenceKv, RowsLandInTheirBlocksAndRefsClipToValidTokens) {
  BlockPool pool(SmallGeometry(KvDType::kF32), 100);
  {
    SequenceKv seq(&pool);
    ASSERT_TRUE(seq.Reserve(6).ok());
    EXPECT_EQ(seq.n_blocks(), 2);
    EXPECT_EQ(pool.used(), 2 * 2 * 3);
    // Position 5 is slot 1 of block 1.
    float* k = reinterpret_cast<float*>(seq.KRow(1, 2, 5));
    k[0] = 42.0f;
    const std::byte* block = seq.BlockData(1, 2, 1);
    float first;
    std::memcpy(&first, block + 1 * seq.geometry().row_bytes(), sizeof(float));
    EXPECT_EQ(first, 42.0f);
    EXPECT_EQ(seq.VRow(1, 2, 5), block + seq.geometry().half_block_bytes() + seq.geometry().row_bytes());

    seq.set_n_tokens(6);
    std::vector<kernels::KvBlockRef> refs;
    seq.AllRefs(1, 2, &refs);
    ASSERT_EQ(refs.size(), 2u);
    EXPECT_EQ(refs[0].n_tokens, 4);
    EXPECT_EQ(refs[1].n_tokens, 2);
    EXPECT_EQ(refs[1].first_pos, 4);
    // Reserving fewer tokens than held changes nothing.
    ASSERT_TRUE(seq.Reserve(3).ok());
    EXPECT_EQ(seq.n_blocks(), 2);
  }
  EXPECT_EQ(pool.used(), 0) << "a destroyed sequence returns its blocks";
}

TEST(SequenceKv, StoreRowWritesBothRowsInTheKvDtype) {
  for (const KvDType dtype : {KvDType::kF32, KvDType::kF16}) {
    BlockPool pool(SmallGeometry(dtype), 12);  // 2 blocks x 2 layers x 3 heads
    SequenceKv seq(&pool);
    ASSERT_TRUE(seq.Reserve(6).ok());
    float k[8], v[8];
    for (int d = 0; d < 8; ++d) k[d] = 0.5f * d - 1.0f, v[d] = -0.25f * d;  // exact in f16
    seq.StoreRow(1, 2, 5, k, v);  // second block, row 1
    for (int d = 0; d < 8; ++d) {
      float kd, vd;
      if (dtype == KvDType::kF32) {
        std::memcpy(&kd, seq.KRow(1, 2, 5) + 4 * d, 4);
        std::memcpy(&vd, seq.VRow(1, 2, 5) + 4 * d, 4);
      } else {
        kernels::f16_t kh, vh;
        std::memcpy(&kh, seq.KRow(1, 2, 5) + 2 * d, 2);
        std::memcpy(&vh, seq.VRow(1, 2, 5) + 2 * d, 2);
        kd = kernels::F16ToF32(kh);
        vd = kernels::F16ToF32(vh);
      }
      EXPECT_EQ(kd, k[d]);
      EXPECT_EQ(vd, v[d]);
    }
    // The neighbouring row and head are untouched (blocks start zeroed).
    for (std::size_t b = 0; b < pool.geometry().row_bytes(); ++b) {
      EXPECT_EQ(seq.KRow(1, 2, 4)[b], std::byte{0});
      EXPECT_EQ(seq.KRow(1, 1, 5)[b], std::byte{0});
    }
  }
}

TEST(SequenceKv, FullPoolFailsReserveWithoutPartialAllocation) {
  BlockPool pool(SmallGeometry(), 10);
  SequenceKv seq(&pool);
  EXPECT_EQ(seq.Reserve(100).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(pool.used(), 0);
  EXPECT_EQ(seq.n_blocks(), 0);
}

TEST(SequenceKv, ReleasedBlocksGoBackToThePoolAndForksCopyTheRest) {
  BlockPool pool(SmallGeometry(KvDType::kF32), 100);
  const KvGeometry& g = pool.geometry();
  SequenceKv seq(&pool);
  ASSERT_TRUE(seq.Reserve(10).ok());  // 3 blocks x 2 layers x 3 heads
  EXPECT_EQ(pool.used(), 18);
  for (int l = 0; l < 2; ++l) {
    for (int h = 0; h < 3; ++h) {
      for (std::int64_t b = 0; b < 3; ++b) {
        std::memset(seq.BlockData(l, h, b), 1 + l * 9 + h * 3 + static_cast<int>(b),
                    g.block_bytes());
      }
    }
  }
  seq.set_n_tokens(10);
  seq.Release(/*layer=*/0, 0, 2);  // layer 0 keeps only its last block
  EXPECT_EQ(pool.used(), 12);
  EXPECT_TRUE(seq.released(0, 2, 1));
  EXPECT_FALSE(seq.released(0, 2, 2));
  EXPECT_FALSE(seq.released(1, 0, 0));
  const kernels::KvBlockRef gone = seq.Ref(0, 1, 0);
  EXPECT_EQ(gone.k, nullptr);
  EXPECT_EQ(gone.n_tokens, 0);
  seq.Release(0, 1, 1);  // releasing twice is a no-op
  seq.Release(1, 3, 5);  // past the reserved blocks: nothing
  EXPECT_EQ(pool.used(), 12);
  {
    // A fork holds the same bytes, and gives back what its source gave back.
    SequenceKv fork(&pool);
    ASSERT_TRUE(fork.Reserve(12).ok());
    ASSERT_TRUE(fork.CopyFrom(seq, 10).ok());
    EXPECT_EQ(fork.n_tokens(), 10);
    EXPECT_TRUE(fork.released(0, 0, 1));
    EXPECT_EQ(pool.used(), 12 + 12);
    EXPECT_EQ(std::memcmp(fork.BlockData(1, 2, 1), seq.BlockData(1, 2, 1), g.block_bytes()), 0);
    EXPECT_EQ(std::memcmp(fork.BlockData(0, 1, 2), seq.BlockData(0, 1, 2), g.block_bytes()), 0);
    // Writes to the fork stay in the fork.
    std::memset(fork.KRow(1, 0, 9), 0x7f, g.row_bytes());
    EXPECT_NE(std::memcmp(fork.BlockData(1, 0, 2), seq.BlockData(1, 0, 2), g.block_bytes()), 0);
  }
  EXPECT_EQ(pool.used(), 12);
}

}  // namespace
}  // namespace smartgen::kv
