// Replays the 2048-token, R = 0.5 point of the 2026-12-04 21:57 sweep (20 requests each of
// colocated and layerwise; tests/sim/data/sim_validate_vm_2048_r0.5_20reps_2026-12-04.jsonl):
// layerwise's token 2 there is one decode step after a transfer that ended before the prefill,
// 5.9-16.0 ms from request to request, and the simulator reads the point's median.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sim/validation.h"

namespace smartgen::sim {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

TEST(SimValidation, LayerwisesOneStepTokenTwoIsTheMedianOfTwentyRequests) {
  auto records = ReadMeasuredRecords(std::string(SMARTGEN_SOURCE_DIR) +
                                     "/tests/sim/data/sim_validate_vm_2048_r0.5_20reps_2026-12-04.jsonl");
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 40u);
  ValidationOptions v;
  v.cpu = *HardwareByName("cpu");
  v.stats = *SelectionStatsByName("random-weights");
  v.calibration = Calibration::kOwn;
  auto report = Validate(*records, v);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  std::vector<double> measured, simulated;
  for (const nlohmann::json& row : (*report)["records"]) {
    if (row["mode"] != "layerwise") continue;
    measured.push_back(row["measured"]["ttst_ms"].get<double>());
    simulated.push_back(row["simulated"]["ttst_ms"].get<double>());
    // One step after the prefill: the transfer ended before it.
    EXPECT_LT(row["simulated"]["ttst_ms"].get<double>(), 25.0) << row.dump();
  }
  ASSERT_EQ(measured.size(), 20u);
  // The requests spread far wider than the 15 % the check allows; their median does not.
  const auto [lo, hi] = std::minmax_element(measured.begin(), measured.end());
  EXPECT_GT(*hi / *lo, 1.5);
  const double m = Median(measured), s = Median(simulated);
  EXPECT_LT(std::abs(s / m - 1), 0.15) << "measured " << m << " ms, simulated " << s << " ms";
  // The report's per-point figure is that comparison.
  const nlohmann::json& point = (*report)["point_summary"]["layerwise"]["ttst"];
  EXPECT_EQ(point["n"].get<int>(), 1);
  EXPECT_DOUBLE_EQ(point["within_15pct"].get<double>(), 1.0);
}

}  // namespace
}  // namespace smartgen::sim
