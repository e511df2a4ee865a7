// kernels::internal::ForEachRowTwoStreams: every row of the range once, as two streams of whole
// groups (the first half's rows in order, the second half's in order, alternating groups), and a
// range too short for two groups or under the minimum size front to back; and the decode GEMVs
// that read two streams give the same values bit for bit as when they read one (matmul_test and
// fast_dot_test check the values against the scalar twins).
#include "kernels/row_streams.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/matmul.h"

namespace smartgen::kernels::internal {
namespace {

std::vector<std::int64_t> Order(std::int64_t r0, std::int64_t r1, std::size_t row_bytes) {
  std::vector<std::int64_t> order;
  ForEachRowTwoStreams(r0, r1, row_bytes, [&](std::int64_t r) { order.push_back(r); });
  return order;
}

TEST(RowStreamsTest, VisitsEveryRowOnce) {
  for (const std::size_t row_bytes : {std::size_t{64}, std::size_t{612}, std::size_t{952},
                                      std::size_t{1792}, std::size_t{5168}, std::size_t{20000}}) {
    for (const std::int64_t r0 : {0, 7, 1000}) {
      for (const std::int64_t n : {0, 1, 2, 5, 16, 17, 31, 144, 1101, 1104}) {
        const std::vector<std::int64_t> order = Order(r0, r0 + n, row_bytes);
        ASSERT_EQ(order.size(), static_cast<std::size_t>(n)) << row_bytes << " " << r0 << " " << n;
        std::vector<int> seen(static_cast<std::size_t>(n), 0);
        for (const std::int64_t r : order) {
          ASSERT_GE(r, r0);
          ASSERT_LT(r, r0 + n);
          ++seen[static_cast<std::size_t>(r - r0)];
        }
        for (const int s : seen) EXPECT_EQ(s, 1) << row_bytes << " " << r0 << " " << n;
      }
    }
  }
}

// Ranges of any size as two streams (SetMinTwoStreamBytes(0)), restored after each test.
class RowStreamsAnySizeTest : public ::testing::Test {
 protected:
  void SetUp() override { SetMinTwoStreamBytes(0); }
  void TearDown() override { SetMinTwoStreamBytes(kMinTwoStreamBytes); }
};

TEST_F(RowStreamsAnySizeTest, AlternatesGroupsOfTheTwoHalves) {
  // 1792-byte rows (896 F16 columns): groups of 3 rows (5 KiB); 20 rows split at 10.
  const std::vector<std::int64_t> order = Order(100, 120, 1792);
  const std::vector<std::int64_t> expected = {100, 101, 102, 110, 111, 112, 103, 104, 105, 113,
                                              114, 115, 106, 107, 108, 116, 117, 118, 109, 119};
  EXPECT_EQ(order, expected);
  // Each half is read front to back.
  std::int64_t last_a = 99, last_b = 109;
  for (const std::int64_t r : order) {
    std::int64_t& last = r < 110 ? last_a : last_b;
    EXPECT_GT(r, last);
    last = r;
  }
}

TEST_F(RowStreamsAnySizeTest, ShortRangesGoFrontToBackAndWideRowsMakeGroupsOfOne) {
  EXPECT_EQ(Order(4, 9, 1792), (std::vector<std::int64_t>{4, 5, 6, 7, 8}));  // under two groups
  EXPECT_EQ(Order(0, 5, 20000), (std::vector<std::int64_t>{0, 2, 1, 3, 4}));
}

TEST(RowStreamsTest, RangesUnderTheMinimumGoFrontToBack) {
  // 73 rows of 1792 bytes = 128 KiB - 256 bytes: one stream; 74 rows: two.
  std::vector<std::int64_t> front_to_back(73);
  for (std::int64_t r = 0; r < 73; ++r) front_to_back[static_cast<std::size_t>(r)] = r;
  EXPECT_EQ(Order(0, 73, 1792), front_to_back);
  const std::vector<std::int64_t> two = Order(0, 74, 1792);
  EXPECT_EQ(two[3], 37);           // the second stream's first row follows the first group
  SetMinTwoStreamBytes(SIZE_MAX);  // one stream everywhere
  std::vector<std::int64_t> all(1000);
  for (std::int64_t r = 0; r < 1000; ++r) all[static_cast<std::size_t>(r)] = r;
  EXPECT_EQ(Order(0, 1000, 1792), all);
  SetMinTwoStreamBytes(kMinTwoStreamBytes);
}

// Every kernel table's single-token GEMV of each type that reads two streams, over a matrix big
// enough for them (at least kMinTwoStreamBytes), with exact and fast dot products: the same bits
// whichever order the rows are read in.
TEST(RowStreamsTest, GemvsGiveTheSameBitsInEitherOrder) {
  std::mt19937 rng(7);
  for (const gguf::GgmlType type :
       {gguf::GgmlType::kF16, gguf::GgmlType::kQ8_0, gguf::GgmlType::kQ4_0, gguf::GgmlType::kQ5_0,
        gguf::GgmlType::kQ4_K, gguf::GgmlType::kQ6_K}) {
    const std::int64_t cols = gguf::GetTypeInfo(type).block_size == 256 ? 512 : 896;
    const std::int64_t rows =
        2 * static_cast<std::int64_t>(kMinTwoStreamBytes / gguf::RowBytes(type, cols)) + 37;
    const testing::Weights w = testing::MakeWeights(rng, type, rows, cols);
    const std::vector<float> x = testing::RandomVector(rng, static_cast<std::size_t>(cols));
    for (const bool fast : {false, true}) {
      SetFastDot(fast);
      for (const KernelTable* table : testing::AvailableTables()) {
        std::vector<float> one(static_cast<std::size_t>(rows)), two(one.size());
        SetMinTwoStreamBytes(SIZE_MAX);
        ASSERT_TRUE(
            MatVecWith(*table, type, w.bytes.data(), rows, cols, x.data(), one.data(), nullptr));
        SetMinTwoStreamBytes(kMinTwoStreamBytes);
        ASSERT_TRUE(
            MatVecWith(*table, type, w.bytes.data(), rows, cols, x.data(), two.data(), nullptr));
        for (std::size_t r = 0; r < one.size(); ++r) {
          ASSERT_EQ(std::memcmp(&one[r], &two[r], sizeof(float)), 0)
              << gguf::GetTypeInfo(type).name << " " << IsaName(table->isa) << " fast " << fast
              << " row " << r;
        }
      }
    }
    SetFastDot(false);
  }
}

}  // namespace
}  // namespace smartgen::kernels::internal
