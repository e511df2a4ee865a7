// The machine rates `smartgen simulate --validate` fits across a sweep (sim/validation_fit.h),
// each on records made up so that the right answer is known.
#include "sim/validation_fit.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace smartgen::sim {
namespace {

TEST(SimValidation, ASelectiveLayersOwnCostIsWhatItsStepPhasesLeave) {
  const ModelShape shape = *ModelShapeByName("smollm2-135m");
  const CostModel cost(*HardwareByName("cpu"), shape);
  MeasuredRecord coloc;
  coloc.mode = Mode::kColocated;
  coloc.prompt_tokens = 2048;
  coloc.ratio = 4;
  coloc.output_tokens = 24;
  coloc.median_gap_ms = 9.0;
  MeasuredRecord sg = coloc;
  sg.mode = Mode::kSmartgen;
  sg.link_mbps = 40;
  sg.selective_steps = 22;
  sg.selective_layer_steps = 23 * shape.n_layers;  // every listed step selective in every layer
  Seconds attention = 0;
  for (int l = 0; l < shape.n_layers; ++l) {
    attention += cost.DecodeAttention(static_cast<double>(shape.LayerKvTokens(l, 2048 + 12)));
  }
  // A step of 8 ms of its own: 1.5 ms of selection, local attention and merge, the dense step
  // less its attention, the CPU of 5 MB/s landing, and 30 x 20 us.
  sg.selective_parts_ms = 1.5;
  const double own_s = (9.0e-3 - attention + 1.5e-3 + 30 * 20e-6) / (1 - 5e6 * cost.hardware().transfer_cpu_s_per_byte);
  sg.selective_own_ms = own_s * 1e3;
  std::map<std::tuple<std::int64_t, double, int>, const MeasuredRecord*> colocated_rep = {{{2048, 4.0, 0}, &coloc}};
  EXPECT_NEAR(internal::FitSelectiveLayerCost({coloc, sg}, colocated_rep, cost).value_or(-1), 20e-6, 1e-9);
  // A request that became exact mid-way (fewer selective layer-steps than listed steps x layers)
  // says nothing about a selective step.
  sg.selective_layer_steps = 10 * shape.n_layers;
  EXPECT_FALSE(internal::FitSelectiveLayerCost({coloc, sg}, colocated_rep, cost).has_value());
}

TEST(SimValidation, TheColdFirstStepIsTheMedianRecordsExcess) {
  // Five idle first steps, one of which met a 100 ms hiccup of the VM: the median request's
  // 2.5 ms (less its first touch) is the cold read, not the mean's 22 ms.
  const ModelShape shape = *ModelShapeByName("smollm2-135m");
  const CostModel cost(*HardwareByName("cpu"), shape);
  std::vector<MeasuredRecord> records;
  for (double excess : {2.0, 3.0, 2.5, 100.0, 2.4}) {
    MeasuredRecord r;
    r.mode = records.size() % 2 == 0 ? Mode::kFull : Mode::kLayerwise;
    r.prompt_tokens = 2048;
    r.kv_bytes = shape.KvBytes(2048);
    r.first_step_excess_ms = excess + cost.FirstTouch(r.kv_bytes) * 1e3;
    records.push_back(r);
  }
  MeasuredRecord smartgen = records.front();  // not a node that sat idle: not counted
  smartgen.mode = Mode::kSmartgen;
  smartgen.first_step_excess_ms = 50;
  records.push_back(smartgen);
  EXPECT_NEAR(internal::FitColdReadRate(records, cost), shape.WeightBytes() / 2.5e-3, 1e3);
  // No such record: -1; a median first step no longer than the rest: no cold read.
  EXPECT_EQ(internal::FitColdReadRate({smartgen}, cost), -1);
  for (MeasuredRecord& r : records) r.first_step_excess_ms = 0;
  EXPECT_EQ(internal::FitColdReadRate(records, cost), 0);
}

TEST(SimValidation, TheFirstSelectionsExtraIsTheMedianRecordsRatio) {
  const ModelShape shape = *ModelShapeByName("smollm2-135m");
  std::vector<MeasuredRecord> records;
  for (double ratio : {2.5, 3.5, 0.9, 40.0, 2.8}) {
    MeasuredRecord r;
    r.mode = Mode::kSmartgen;
    r.selective_steps = 23;
    r.selective_layer_steps = 23 * shape.n_layers;
    r.first_select_ratio = ratio;
    records.push_back(r);
  }
  EXPECT_NEAR(internal::FitFirstSelectExtra(records, shape).value_or(-1), 1.8, 1e-12);
  // A request that became exact mid-way, or whose node did not time its phases, says nothing.
  for (MeasuredRecord& r : records) r.selective_layer_steps = 10 * shape.n_layers;
  records.front().selective_layer_steps = 23 * shape.n_layers;
  records.front().first_select_ratio.reset();
  EXPECT_FALSE(internal::FitFirstSelectExtra(records, shape).has_value());
}

TEST(SimValidation, TheFirstSelectionsRatioIsReadFromTheNodesStepPhases) {
  const std::string line =
      R"({"mode":"smartgen","n_prompt":2048,"target_R":4,"link_gbps":0.04,"ttft_ms":2000,)"
      R"("selective_layer_steps":90,"selective_ms":{"select":6.0},)"
      R"("selective_ms_per_step":{"own":[15,10,11],"select":[4.0,1.0,1.5],)"
      R"("local_attention":[2,1,1],"merge_and_stats":[0,0,0]}})";
  const std::string path = ::testing::TempDir() + "first_select.jsonl";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs((line + "\n").c_str(), f);
    std::fclose(f);
  }
  auto records = ReadMeasuredRecords(path);
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 1u);
  ASSERT_TRUE((*records)[0].first_select_ratio.has_value());
  EXPECT_NEAR(*(*records)[0].first_select_ratio, 4.0 / 1.25, 1e-12);
  EXPECT_EQ((*records)[0].selective_steps, 3);
}

}  // namespace
}  // namespace smartgen::sim
