// Q5_0 and Q8_0 rows regrouped for the VNNI GEMV (kernels/q5_0_groups.h, kernels/q8_0_groups.h):
// grouping is undone exactly, and every kernel of every table for the type - the exact f32 paths,
// the integer-dot twins, the VNNI GEMV and batched kernels - gives on grouped rows bit for bit
// what it gives on the file's rows.
#include <gtest/gtest.h>

#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "kernel_test_util.h"
#include "kernels/matmul.h"
#include "kernels/q5_0_groups.h"
#include "kernels/q8_0_groups.h"
#include "kernels/quant.h"

namespace smartgen::kernels {
namespace {

using gguf::GgmlType;

// Blocks per row: 1, 2, 3 (a part group only), 4, 5, 18 (SmolLM2-135M), 28 (Qwen2.5-0.5B), 48.
const std::int64_t kGroupShapes[][2] = {{3, 32},  {5, 64},   {9, 96},   {4, 128},
                                        {7, 160}, {64, 576}, {33, 896}, {130, 1536}};

// One regrouped type: its layout and its functions.
struct Grouping {
  GgmlType type;
  WeightLayout layout;
  void (*group)(std::byte*, std::int64_t, std::int64_t);
  void (*ungroup)(const std::byte*, std::byte*, std::int64_t, std::int64_t);
  bool (*pays)();
};

void PrintTo(const Grouping& g, std::ostream* os) { *os << gguf::GetTypeInfo(g.type).name; }

const Grouping kGroupings[] = {
    {GgmlType::kQ5_0, WeightLayout::kQ5_0Groups, GroupQ5_0Rows, UngroupQ5_0Rows, Q5_0GroupsPay},
    {GgmlType::kQ8_0, WeightLayout::kQ8_0Groups, GroupQ8_0Rows, UngroupQ8_0Rows, Q8_0GroupsPay},
};

class GroupedRows : public ::testing::TestWithParam<Grouping> {
 protected:
  std::vector<std::byte> Random(std::mt19937& rng, std::int64_t rows, std::int64_t cols) const {
    const std::size_t rb = gguf::RowBytes(GetParam().type, cols);
    std::vector<std::byte> bytes(rb * static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::vector<float> row = testing::RandomVector(rng, static_cast<std::size_t>(cols));
      EXPECT_TRUE(QuantizeRow(GetParam().type, row.data(), bytes.data() + r * rb, cols));
    }
    return bytes;
  }
  std::vector<std::byte> Grouped(std::vector<std::byte> file, std::int64_t rows,
                                 std::int64_t cols) const {
    GetParam().group(file.data(), rows, cols);
    return file;
  }
};

struct GroupsFastDot {
  explicit GroupsFastDot(bool on) { SetFastDot(on); }
  ~GroupsFastDot() { SetFastDot(false); }
};

TEST_P(GroupedRows, UngroupingGivesTheFilesBytesBack) {
  std::mt19937 rng(21);
  for (const auto& [rows, cols] : kGroupShapes) {
    const std::vector<std::byte> file = Random(rng, rows, cols);
    const std::vector<std::byte> grouped = Grouped(file, rows, cols);
    std::vector<std::byte> back(file.size());
    // Every row changes: its whole groups of 4 blocks and its part group alike.
    EXPECT_NE(grouped, file) << rows << "x" << cols;
    GetParam().ungroup(grouped.data(), back.data(), rows, cols);
    EXPECT_EQ(back, file) << rows << "x" << cols;
  }
}

TEST_P(GroupedRows, EveryKernelOnGroupedRowsEqualsItOnTheFilesRows) {
  std::mt19937 rng(22);
  core::ThreadPool pool(2);
  for (const internal::KernelTable* table : testing::AvailableTables()) {
    for (const bool fast : {false, true}) {
      GroupsFastDot fast_dot(fast);
      for (const auto& [rows, cols] : kGroupShapes) {
        const std::vector<std::byte> file = Random(rng, rows, cols);
        const std::vector<std::byte> grouped = Grouped(file, rows, cols);
        const WeightView file_view{GetParam().type, file.data(), rows, cols};
        const WeightView grouped_view{GetParam().type, grouped.data(), rows, cols,
                                      GetParam().layout};
        // 1: a decode step (the GEMVs); 3 and 17: decode batches (token by token, then panels
        // of 16); 130: a prefill chunk.
        for (const std::int64_t n : {1, 3, 17, 130}) {
          const std::vector<float> x =
              testing::RandomVector(rng, static_cast<std::size_t>(n * cols));
          std::vector<float> want(static_cast<std::size_t>(n * rows)), got(want.size(), -1.0f);
          for (core::ThreadPool* p : {static_cast<core::ThreadPool*>(nullptr), &pool}) {
            const MatJob want_job{&file_view, x.data(), want.data()};
            const MatJob got_job{&grouped_view, x.data(), got.data()};
            ASSERT_TRUE(internal::MatMulManyWith(*table, {&want_job, 1}, n, p));
            ASSERT_TRUE(internal::MatMulManyWith(*table, {&got_job, 1}, n, p));
            EXPECT_EQ(std::memcmp(got.data(), want.data(), sizeof(float) * got.size()), 0)
                << internal::IsaName(table->isa) << (fast ? " fast-dot " : " exact ") << rows << "x"
                << cols << " n " << n << (p ? " pool" : "");
          }
        }
        // The f32 references read the layout too.
        const std::vector<float> x = testing::RandomVector(rng, static_cast<std::size_t>(cols));
        std::vector<float> want(static_cast<std::size_t>(rows)), got(want.size());
        MatVecReference(file_view, x.data(), want.data());
        MatVecReference(grouped_view, x.data(), got.data());
        EXPECT_EQ(got, want);
      }
    }
  }
}

// A gated FFN pass (gate and up grouped, as a loaded model's) equals the file's.
TEST_P(GroupedRows, GatedPassesOnGroupedRowsEqualTheFiles) {
  std::mt19937 rng(23);
  core::ThreadPool pool(2);
  GroupsFastDot fast_dot(true);
  const std::int64_t rows = 96, cols = 576;
  const GgmlType type = GetParam().type;
  const std::vector<std::byte> gate = Random(rng, rows, cols), up = Random(rng, rows, cols);
  const std::vector<std::byte> gate_g = Grouped(gate, rows, cols), up_g = Grouped(up, rows, cols);
  const WeightView g{type, gate.data(), rows, cols}, u{type, up.data(), rows, cols};
  const WeightView gg{type, gate_g.data(), rows, cols, GetParam().layout};
  const WeightView ug{type, up_g.data(), rows, cols, GetParam().layout};
  for (const std::int64_t n : {1, 20}) {
    const std::vector<float> x = testing::RandomVector(rng, static_cast<std::size_t>(n * cols));
    std::vector<float> want(static_cast<std::size_t>(n * rows)), got(want.size());
    MatMulSwiGlu(g, u, x.data(), n, want.data(), &pool);
    MatMulSwiGlu(gg, ug, x.data(), n, got.data(), &pool);
    EXPECT_EQ(got, want) << n;
  }
}

TEST_P(GroupedRows, PayOnlyForTheVnniGemv) {
  {
    GroupsFastDot fast_dot(true);
    const bool vnni = internal::ActiveKernels().isa == internal::Isa::kAvx512 &&
                      core::GetCpuFeatures().avx512vnni;
    EXPECT_EQ(GetParam().pays(), vnni);
  }
  GroupsFastDot exact(false);
  EXPECT_FALSE(GetParam().pays());
}

INSTANTIATE_TEST_SUITE_P(Types, GroupedRows, ::testing::ValuesIn(kGroupings), [](const auto& info) {
  return std::string(gguf::GetTypeInfo(info.param.type).name);
});

}  // namespace
}  // namespace smartgen::kernels
