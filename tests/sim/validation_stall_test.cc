// Replays one point of a 2026-12-04 sweep (2048 tokens, R = 2, five requests each of colocated
// and SmartGen; tests/sim/data/sim_validate_vm_2048_r2_2026-12-04.jsonl) and checks that the
// simulated SmartGen requests wait for blocks as long as the node's did, step by step.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "sim/validation.h"

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

}  // namespace
}  // namespace smartgen::sim
