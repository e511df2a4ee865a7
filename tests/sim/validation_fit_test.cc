// The machine rates `smartgen simulate --validate` fits across a sweep (sim/validation_fit.h),
// each on records made up so that the right answer is known.
#include "sim/validation_fit.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace smartgen::sim {
namespace {

// A SmartGen record at (2048, R) on a link of `mbps` whose steps (2 on) take `own_ms` of their
// own, `parts_ms` of it selection, local attention and merge, with `landed` bytes landing from
// its first token (2000 ms) until its last (2500 ms).
MeasuredRecord SmartgenRecord(double ratio, double mbps, double own_ms, double parts_ms, double landed) {
  MeasuredRecord r;
  r.mode = Mode::kSmartgen;
  r.prompt_tokens = 2048;
  r.ratio = ratio;
  r.output_tokens = 24;
  r.link_mbps = mbps;
  r.selective_steps = 22;
  r.selective_layer_steps = 23 * 30;  // every listed step selective in every layer
  r.selective_own_ms = own_ms;
  r.selective_parts_ms = parts_ms;
  r.ttft_ms = 2000;
  r.e2e_ms = 2500;
  r.decode_landed_bytes = landed;
  return r;
}

TEST(SimValidation, ASelectiveLayersOwnCostAndTheLandingBytesCpuAreFittedTogether) {
  const ModelShape shape = *ModelShapeByName("smollm2-135m");
  const CostModel cost(*HardwareByName("cpu"), shape);
  Seconds attention = 0;
  for (int l = 0; l < shape.n_layers; ++l) {
    attention += cost.DecodeAttention(static_cast<double>(shape.LayerKvTokens(l, 2048 + 12)));
  }
  // Colocated steps of 9 ms at two points; SmartGen steps of 1.5 ms of phases, the dense step
  // less its attention, 30 x c and the CPU of the bytes landing during them at k per byte: 1 MB
  // and 4 MB over 0.5 s (2 and 8 MB/s; the links' 40 and 80 MB/s are not the rate).
  std::vector<MeasuredRecord> records;
  for (double ratio : {4.0, 2.0}) {
    MeasuredRecord coloc;
    coloc.mode = Mode::kColocated;
    coloc.prompt_tokens = 2048;
    coloc.ratio = ratio;
    coloc.output_tokens = 24;
    coloc.median_gap_ms = 9.0;
    records.push_back(coloc);
  }
  const auto own_ms = [&](double c, double k, double bytes_per_s) {
    return (9.0e-3 - attention + 1.5e-3 + 30 * c) / (1 - bytes_per_s * k) * 1e3;
  };
  records.push_back(SmartgenRecord(4, 320, own_ms(20e-6, 3e-9, 2e6), 1.5, 1e6));
  records.push_back(SmartgenRecord(2, 640, own_ms(20e-6, 3e-9, 8e6), 1.5, 4e6));
  std::map<std::tuple<std::int64_t, double, int>, const MeasuredRecord*> colocated_rep = {
      {{2048, 4.0, 0}, &records[0]}, {{2048, 2.0, 0}, &records[1]}};
  std::optional<internal::SelectiveCostFit> fit = internal::FitSelectiveCosts(records, colocated_rep, cost);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->layer_s, 20e-6, 1e-10);
  EXPECT_NEAR(fit->transfer_cpu_s_per_byte, 3e-9, 1e-14);
  // Steps that cost less than the dense rest at the slower link: no layer cost, k alone.
  records[2].selective_own_ms = own_ms(-40e-6, 3e-9, 2e6);
  fit = internal::FitSelectiveCosts(records, colocated_rep, cost);
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(fit->layer_s, 0);
  EXPECT_GT(fit->transfer_cpu_s_per_byte, 3e-9);
  // One point says nothing about k: the cost model's is kept and c fitted with it.
  records.pop_back();
  records[2].selective_own_ms = own_ms(20e-6, cost.hardware().transfer_cpu_s_per_byte, 2e6);
  fit = internal::FitSelectiveCosts(records, colocated_rep, cost);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->layer_s, 20e-6, 1e-10);
  EXPECT_EQ(fit->transfer_cpu_s_per_byte, cost.hardware().transfer_cpu_s_per_byte);
  // A request that became exact mid-way (fewer selective layer-steps than listed steps x layers)
  // says nothing about a selective step.
  records[2].selective_layer_steps = 10 * shape.n_layers;
  EXPECT_FALSE(internal::FitSelectiveCosts(records, colocated_rep, cost).has_value());
}

TEST(SimValidation, LocalAttentionsRateAndFixedCostAreTheLineThroughTheRecordsSteps) {
  const ModelShape shape = *ModelShapeByName("smollm2-135m");
  const double block_bytes = shape.KvBytesPerTokenLayer() / shape.n_kv_heads * 16;
  // 12 GB/s and 0.6 ms a step (20 us per layer), at three sizes of what is present.
  std::vector<MeasuredRecord> records;
  for (double blocks : {500.0, 4000.0, 11000.0}) {
    MeasuredRecord r = SmartgenRecord(1, 160, 12, 4, 1e6);
    r.local_attended_blocks = blocks * 21;  // 21 steps after the first
    r.local_attention_ms = (0.6e-3 + blocks * block_bytes / 12e9) * 1e3 * 21;
    records.push_back(r);
  }
  std::optional<internal::LocalAttentionFit> fit = internal::FitLocalAttention(records, shape, 16);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->bytes_per_s, 12e9, 1e3);
  EXPECT_NEAR(fit->layer_s, 20e-6, 1e-12);
  // A line that would cross below 0 runs through the origin instead.
  records[2].local_attention_ms *= 2;
  fit = internal::FitLocalAttention(records, shape, 16);
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(fit->layer_s, 0);
  EXPECT_LT(fit->bytes_per_s, 12e9);
  // One record (or none with the figures) fits nothing.
  records.resize(1);
  EXPECT_FALSE(internal::FitLocalAttention(records, shape, 16).has_value());
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

TEST(SimValidation, TheStepPhasesAreReadFromTheNodesRecord) {
  const std::string line =
      R"({"mode":"smartgen","n_prompt":2048,"target_R":4,"link_gbps":0.04,"ttft_ms":2000,)"
      R"("selective_layer_steps":90,"selective_ms":{"select":6.0},)"
      R"("selective_ms_per_step":{"own":[15,10,11],"select":[4.0,1.0,1.5],)"
      R"("local_attention":[2,1,1.5],"merge_and_stats":[0,0,0]},)"
      R"("attended_blocks_per_step":[900,100,200],)"
      R"("bytes_by_path":{"proactive":5e6,"on_demand":1e6,"speculative":2e6}})";
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
  // Local attention and what it read, from step 2 on; what landed while it decoded.
  EXPECT_EQ((*records)[0].local_attended_blocks, 300);
  EXPECT_EQ((*records)[0].local_attention_ms, 2.5);
  EXPECT_EQ((*records)[0].decode_landed_bytes, 3e6);
}

}  // namespace
}  // namespace smartgen::sim
