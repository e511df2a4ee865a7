// Layerwise's token 2 when the transfer ends about when the prefill does, replayed from two
// recorded points (20 requests each of colocated and layerwise):
// - the 2048-token, R = 0.5 point of the 2026-12-04 21:57 sweep
//   (tests/sim/data/sim_validate_vm_2048_r0.5_20reps_2026-12-04.jsonl): token 2 is one decode
//   step after a transfer that ended before the prefill, 5.9-16.0 ms from request to request,
//   and the simulator reads the point's median;
// - the 2048-token, R = 1 point of the 2026-12-05 01:18 sweep
//   (sim_validate_vm_2048_r1_layerwise_knife_edge_2026-12-05.jsonl): the requests' own R ran
//   0.90-1.06, so some took one step and some waited for the transfer's tail. Each side agrees
//   with its simulation; the point's median (the 10th and 11th of 20, the upper end of the
//   one-step requests' measured spread) does not: 14.2 ms measured, 11.8 simulated on these
//   records alone (docs/RESULTS.md, "Validation with SmartGen's local attention at its own rate").
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

// The validation of a recorded point's 40 records, as `simulate --validate --calibration own`
// runs it.
nlohmann::json Replay(const char* file) {
  auto records = ReadMeasuredRecords(std::string(SMARTGEN_SOURCE_DIR) + "/tests/sim/data/" + file);
  EXPECT_TRUE(records.ok()) << records.status().ToString();
  if (!records.ok()) return nullptr;
  EXPECT_EQ(records->size(), 40u);
  ValidationOptions v;
  v.cpu = *HardwareByName("cpu");
  v.stats = *SelectionStatsByName("random-weights");
  v.calibration = Calibration::kOwn;
  auto report = Validate(*records, v);
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  return report.ok() ? *report : nullptr;
}

TEST(SimValidation, LayerwisesOneStepTokenTwoIsTheMedianOfTwentyRequests) {
  const nlohmann::json report = Replay("sim_validate_vm_2048_r0.5_20reps_2026-12-04.jsonl");
  ASSERT_TRUE(report.is_object());
  std::vector<double> measured, simulated;
  for (const nlohmann::json& row : report["records"]) {
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
  const nlohmann::json& point = report["point_summary"]["layerwise"]["ttst"];
  EXPECT_EQ(point["n"].get<int>(), 1);
  EXPECT_DOUBLE_EQ(point["within_15pct"].get<double>(), 1.0);
}

TEST(SimValidation, LayerwiseAtROneAgreesOnEachSideOfTheKnifeEdge) {
  const nlohmann::json report = Replay("sim_validate_vm_2048_r1_layerwise_knife_edge_2026-12-05.jsonl");
  ASSERT_TRUE(report.is_object());
  int one_step = 0, tail = 0;
  std::vector<double> ratios;
  for (const nlohmann::json& row : report["records"]) {
    if (row["mode"] != "layerwise") continue;
    const double r = row["measured_R"].get<double>();
    const double measured = row["measured"]["ttst_ms"].get<double>();
    const double simulated = row["simulated"]["ttst_ms"].get<double>();
    const double step = row["measured"]["mean_tbt_ms"].get<double>();
    ratios.push_back(simulated / measured);
    if (r < 0.99) {
      // The KV was there before token 1: one step, simulated as one step (a cold one).
      ++one_step;
      EXPECT_LT(simulated, 1.6 * step) << row.dump();
    } else if (r > 1.02) {
      // The transfer's tail ran past the prefill by 3-6 %: token 2 waits for it, 80-145 ms,
      // and the simulated wait is within 15 % of each request's own.
      ++tail;
      EXPECT_GT(measured, 5 * step) << row.dump();
      EXPECT_LT(std::abs(simulated / measured - 1), 0.15) << row.dump();
    }
  }
  EXPECT_EQ(one_step, 12);
  EXPECT_EQ(tail, 6);
  // The requests' own ratios, simulated over measured, centre on 1 (0.97 here); the point's
  // median is not checked (see the header).
  EXPECT_LT(std::abs(Median(ratios) - 1), 0.15);
}

}  // namespace
}  // namespace smartgen::sim
