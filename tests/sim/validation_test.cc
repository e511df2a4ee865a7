// Replays the recorded 4096-token, R = 4 point of the TTST sweep (docs/RESULTS.md; the
// records are tests/sim/data/ttst_sweep_2026-11-30.jsonl) and checks the simulator agrees.
#include "sim/validation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace smartgen::sim {
namespace {

const std::string kRecords = std::string(SMARTGEN_SOURCE_DIR) + "/tests/sim/data/ttst_sweep_2026-11-30.jsonl";

std::vector<MeasuredRecord> Point(std::int64_t prompt, double ratio) {
  auto all = ReadMeasuredRecords(kRecords);
  EXPECT_TRUE(all.ok()) << all.status().ToString();
  std::vector<MeasuredRecord> out;
  for (const MeasuredRecord& r : *all) {
    if (r.prompt_tokens == prompt && r.ratio == ratio) out.push_back(r);
  }
  return out;
}

double Err(const nlohmann::json& row, const char* what) {
  const nlohmann::json& e = row["error"][what];
  return e.is_number() ? std::abs(e.get<double>()) : 1e9;
}

TEST(SimValidation, ReadsTheWholeRecordedSweep) {
  auto all = ReadMeasuredRecords(kRecords);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->size(), 50u);  // 2 lengths x 5 ratios x 5 modes
}

TEST(SimValidation, RecordedR4PointAgreesWithin15Percent) {
  const std::vector<MeasuredRecord> point = Point(4096, 4);
  ASSERT_EQ(point.size(), 5u);
  ValidationOptions v;
  v.cpu = *HardwareByName("cpu");
  v.stats = *SelectionStatsByName("random-weights");
  auto report = Validate(point, v);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  for (const nlohmann::json& row : (*report)["records"]) {
    const std::string mode = row["mode"];
    SCOPED_TRACE(mode);
    if (mode == "colocated") continue;  // the calibration point
    EXPECT_LE(Err(row, "ttst"), 0.15) << row.dump();
    EXPECT_LE(Err(row, "e2e"), 0.15) << row.dump();
    EXPECT_TRUE(row["exact_agrees"].get<bool>()) << row.dump();
    if (mode == "smartgen" || mode == "auto" || mode == "layerwise") {
      EXPECT_LE(Err(row, "mean_tbt"), 0.15) << row.dump();
    }
    if (mode == "full" || mode == "layerwise") {
      EXPECT_LE(Err(row, "time_to_exact"), 0.15);
    }
  }
}

TEST(SimValidation, LongOutputAndAblationRunsAgree) {
  // The 640-token run (time to exact, every byte) and the ablation (options per record),
  // with the sweep's colocated R = 4 record as the decode step.
  auto extra = ReadMeasuredRecords(std::string(SMARTGEN_SOURCE_DIR) +
                                   "/tests/sim/data/ttst_r4_long_and_ablation_2026-11-30.jsonl");
  ASSERT_TRUE(extra.ok()) << extra.status().ToString();
  std::vector<MeasuredRecord> records = Point(4096, 4);
  records.insert(records.end(), extra->begin(), extra->end());
  ValidationOptions v;
  v.cpu = *HardwareByName("cpu");
  v.stats = *SelectionStatsByName("random-weights");
  auto report = Validate(records, v);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const nlohmann::json& rows = (*report)["records"];
  ASSERT_EQ(rows.size(), 10u);
  for (std::size_t i = 5; i < rows.size(); ++i) {
    const nlohmann::json& row = rows[i];
    SCOPED_TRACE(row.dump());
    EXPECT_LE(Err(row, "ttst"), 0.15);
    EXPECT_LE(Err(row, "mean_tbt"), 0.15);
    EXPECT_NEAR(row["simulated"]["bytes_over_full"].get<double>(),
                row["measured"]["bytes_over_full"].get<double>(), 0.03);
  }
  // SmartGen with 640 tokens becomes exact close to layerwise's transfer completion.
  EXPECT_LE(Err(rows[6], "time_to_exact"), 0.15);
  EXPECT_TRUE(rows[6]["simulated"]["time_to_exact_ms"].is_number());
  // Proactive only never fetches and never becomes exact.
  EXPECT_TRUE(rows[7]["simulated"]["time_to_exact_ms"].is_null());
}

TEST(SimValidation, MalformedRecordsNameTheLine) {
  const std::string path = ::testing::TempDir() + "/bad_records.jsonl";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{\"mode\": \"full\", \"prompt_tokens\": 10, \"link_mbps\": 1, \"ttft_ms\": 1}\n[1]\n", f);
  std::fclose(f);
  auto r = ReadMeasuredRecords(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(":2:"), std::string::npos);
}

}  // namespace
}  // namespace smartgen::sim
