// Replays one point of a 2026-12-04 sweep (2048 tokens, R = 2, five requests each of colocated
// and SmartGen; tests/sim/data/sim_validate_vm_2048_r2_2026-12-04.jsonl) and checks that the
// simulated SmartGen requests wait for blocks as long as the node's did, step by step.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "sim/validation.h"
#include "sim/validation_fit.h"

namespace smartgen::sim {
namespace {

TEST(SimValidation, ASlowLinksLateStepsWaitOnlyForTheirFewWholeBlocks) {
  // After step 1's fetches drain (about step 9) the node asked for 0-7 blocks a step and waited
  // 0-1 ms for them; spread over the 30 layers as slivers, every layer waited (2-5 ms a step,
  // mean TBT +21 %) until DecodeNode::Fetch carried slivers into whole blocks.
  auto records = ReadMeasuredRecords(std::string(SMARTGEN_SOURCE_DIR) +
                                     "/tests/sim/data/sim_validate_vm_2048_r2_2026-12-04.jsonl");
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 10u);
  ValidationOptions v;
  v.cpu = *HardwareByName("cpu");
  v.stats = *SelectionStatsByName("random-weights");
  v.calibration = Calibration::kOwn;
  v.replay_selection = true;
  auto report = Validate(*records, v);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  int smartgen = 0;
  for (const nlohmann::json& row : (*report)["records"]) {
    if (row["mode"] != "smartgen") continue;
    ++smartgen;
    SCOPED_TRACE(row.dump());
    const double measured = row["measured"]["stall_ms"].get<double>();
    EXPECT_NEAR(row["simulated"]["stall_ms"].get<double>(), measured, 0.2 * measured);
    // From step 10 on, under 2 ms a step on average, as measured (0.6 ms).
    const nlohmann::json& steps = row["simulated"]["stall_ms_per_step"];
    ASSERT_GE(steps.size(), 20u);
    double late = 0;
    for (std::size_t i = 9; i < steps.size(); ++i) late += steps[i].get<double>();
    EXPECT_LT(late / static_cast<double>(steps.size() - 9), 2.0);
  }
  EXPECT_EQ(smartgen, 5);
  for (const nlohmann::json& p : (*report)["points"]) {
    SCOPED_TRACE(p.dump());
    EXPECT_LE(std::abs(p["error"]["mean_tbt"].get<double>()), 0.15);
  }
}

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

}  // namespace
}  // namespace smartgen::sim
