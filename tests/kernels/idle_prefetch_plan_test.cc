// kernels::internal::PlanIdlePrefetch: which bytes of the next pass each lane's thread reads
// first, against the pass's own chunk geometry (VecChunkRows, LaneClaims' SplitRange).
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "core/lane_shares.h"
#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/matmul_pass.h"

namespace smartgen::kernels::internal {
namespace {

WeightView F32(const std::vector<float>& data, std::int64_t rows, std::int64_t cols) {
  return {gguf::GgmlType::kF32, data.data(), rows, cols};
}

// The row at which `lane` of `threads` starts in a pass over matrices of these row counts (lanes
// split evenly, or by `shares`).
std::pair<int, std::int64_t> LaneStart(const std::vector<std::int64_t>& rows,
                                       std::int64_t chunk_rows, int lane, int threads,
                                       const core::LaneShares* shares = nullptr) {
  std::int64_t row_chunks = 0;
  for (std::int64_t r : rows) row_chunks += (r + chunk_rows - 1) / chunk_rows;
  std::int64_t c = shares != nullptr
                       ? shares->Range(row_chunks, lane).first
                       : core::ThreadPool::SplitRange(row_chunks, lane, threads).first;
  for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
    const std::int64_t chunks = (rows[i] + chunk_rows - 1) / chunk_rows;
    if (c < chunks) return {i, c * chunk_rows};
    c -= chunks;
  }
  return {-1, 0};
}

TEST(PlanIdlePrefetch, EachLaneStartsWhereItsChunksOfTheNextPassStart) {
  // q/k/v of the SmolLM2-135M shape in f32: 576 x 576, 192 x 576, 192 x 576.
  std::vector<float> k(192 * 576), v(192 * 576), q(576 * 576);
  const WeightView wk = F32(k, 192, 576), wv = F32(v, 192, 576), wq = F32(q, 576, 576);
  const NextPass next{{&wk, &wv, &wq}};
  for (int threads : {2, 3, 4}) {
    const core::IdlePrefetch plan = PlanIdlePrefetch(next, threads);
    const std::int64_t chunk_rows = VecChunkRows(192 + 192 + 576, 576 * 4, threads);
    for (int lane = 0; lane < threads; ++lane) {
      const auto [m, row] = LaneStart({192, 192, 576}, chunk_rows, lane, threads);
      const WeightView* w[] = {&wk, &wv, &wq};
      ASSERT_GT(plan.n_ranges[lane], 0) << "lane " << lane;
      EXPECT_EQ(plan.ranges[lane][0].p, w[m]->row(row)) << "threads " << threads << " lane " << lane;
      EXPECT_LE(plan.Bytes(lane), kIdlePrefetchBytes);
      EXPECT_GT(plan.Bytes(lane), 0u);
    }
    for (int lane = threads; lane < core::IdlePrefetch::kMaxLanes; ++lane) {
      EXPECT_EQ(plan.n_ranges[lane], 0);
    }
  }
}

TEST(PlanIdlePrefetch, LanesSizedBySharesStartWhereTheSharesPutThem) {
  std::vector<float> k(192 * 576), v(192 * 576), q(576 * 576);
  const WeightView wk = F32(k, 192, 576), wv = F32(v, 192, 576), wq = F32(q, 576, 576);
  const NextPass next{{&wk, &wv, &wq}};
  core::LaneShares shares;
  shares.Reset(2);
  // Lane 1's thread waits 300 us of every 1000-us step: its lane grows to about 0.59 of a pass.
  for (int i = 0; i < core::LaneShares::kWindow; ++i) {
    shares.Learn(std::vector<core::Nanos>{0, 300'000}, 1'000'000);
  }
  const std::int64_t chunk_rows = VecChunkRows(192 + 192 + 576, 576 * 4, 2);
  const auto [m, row] = LaneStart({192, 192, 576}, chunk_rows, 1, 2, &shares);
  ASSERT_NE(LaneStart({192, 192, 576}, chunk_rows, 1, 2),
            LaneStart({192, 192, 576}, chunk_rows, 1, 2, &shares));
  const WeightView* w[] = {&wk, &wv, &wq};
  const core::IdlePrefetch plan = PlanIdlePrefetch(next, 2, &shares);
  ASSERT_GT(plan.n_ranges[1], 0);
  EXPECT_EQ(plan.ranges[1][0].p, w[m]->row(row));
  EXPECT_EQ(plan.ranges[0][0].p, wk.row(0));
}

TEST(PlanIdlePrefetch, AGatedPassSplitsTheBudgetBetweenGateAndUpRows) {
  // gate / up of the Qwen2.5-0.5B shape in f32: 4864 x 896 each (17 MB).
  std::vector<float> g(4864 * 896), u(4864 * 896);
  const WeightView gate = F32(g, 4864, 896), up = F32(u, 4864, 896);
  const core::IdlePrefetch plan = PlanIdlePrefetch({{&gate}, &up}, 2);
  const std::int64_t chunk_rows = VecChunkRows(4864, 896 * 4, 2);
  for (int lane = 0; lane < 2; ++lane) {
    const std::int64_t row = LaneStart({4864}, chunk_rows, lane, 2).second;
    ASSERT_EQ(plan.n_ranges[lane], 2);
    EXPECT_EQ(plan.ranges[lane][0].p, gate.row(row));
    EXPECT_EQ(plan.ranges[lane][1].p, up.row(row));
    EXPECT_EQ(plan.ranges[lane][0].bytes, kIdlePrefetchBytes / 2);
    EXPECT_EQ(plan.ranges[lane][1].bytes, kIdlePrefetchBytes / 2);
  }
}

TEST(PlanIdlePrefetch, ASmallPassIsPlannedWholeAndOneThreadNotAtAll) {
  std::vector<float> o(64 * 64);
  const WeightView w = F32(o, 64, 64);
  const core::IdlePrefetch plan = PlanIdlePrefetch({{&w}}, 2);
  EXPECT_EQ(plan.Bytes(0) + plan.Bytes(1), 64u * 64u * 4u);
  EXPECT_EQ(plan.ranges[0][0].p, w.row(0));
  const core::IdlePrefetch alone = PlanIdlePrefetch({{&w}}, 1);
  EXPECT_EQ(alone.n_ranges[0], 0);
  const core::IdlePrefetch none = PlanIdlePrefetch({}, 2);
  EXPECT_EQ(none.n_ranges[0] + none.n_ranges[1], 0);
}

}  // namespace
}  // namespace smartgen::kernels::internal
