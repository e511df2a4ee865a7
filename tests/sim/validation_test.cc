// Replays the recorded 4096-token, R = 4 point of the TTST sweep (docs/RESULTS.md; the
// records are tests/sim/data/ttst_sweep_2026-11-30.jsonl) and checks the simulator agrees.
#include "sim/validation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
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

// Node records replayed as `smartgen simulate --validate --calibration own --selection replay`
// does: the CPU preset, each record's own dense step and prefill, its recorded selections.
// `first_wait_ms`: the node's default when the records were made (15 before 2026-12-01 19:00).
ValidationOptions ReplayOwn(double first_wait_ms = 8) {
  ValidationOptions v;
  v.smartgen.first_wait_ms = first_wait_ms;
  v.cpu = *HardwareByName("cpu");
  v.stats = *SelectionStatsByName("random-weights");
  v.calibration = Calibration::kOwn;
  v.replay_selection = true;
  return v;
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
  v.smartgen.first_wait_ms = 15;  // the default when these runs were recorded (now 8)
  v.cpu = *HardwareByName("cpu");
  v.stats = *SelectionStatsByName("random-weights-2026-11-30");
  v.smartgen = *ParseSmartgenSimOptions(LegacyNodeOptions());  // the node of 2026-11-30
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

TEST(SimValidation, RepetitionsCompareAsPerPointMedians) {
  // Three repetitions of the recorded R = 4 point: the SmartGen request measured at 0.5x, 1x
  // and 3x its TTST, each rep with its own colocated record (rep 1's decode step twice as slow).
  const std::vector<MeasuredRecord> point = Point(4096, 4);
  std::vector<MeasuredRecord> records;
  const double scale[] = {0.5, 1.0, 3.0};
  for (int rep = 0; rep < 3; ++rep) {
    for (MeasuredRecord r : point) {
      if (r.mode != Mode::kColocated && r.mode != Mode::kSmartgen) continue;
      r.rep = rep;
      if (r.mode == Mode::kSmartgen) r.ttst_ms *= scale[rep];
      if (r.mode == Mode::kColocated && rep == 1) r.mean_tbt_ms *= 2.0;
      records.push_back(r);
    }
  }
  ValidationOptions v;
  v.cpu = *HardwareByName("cpu");
  v.stats = *SelectionStatsByName("random-weights-2026-11-30");
  v.smartgen = *ParseSmartgenSimOptions(LegacyNodeOptions());
  v.smartgen.first_wait_ms = 15;
  auto report = Validate(records, v);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const nlohmann::json& rows = (*report)["records"];
  ASSERT_EQ(rows.size(), 6u);
  // Each SmartGen rep is simulated on its own rep's colocated step: rep 1's is slower.
  std::vector<double> sim_tbt;
  for (const nlohmann::json& row : rows) {
    if (row["mode"] == "smartgen") sim_tbt.push_back(row["simulated"]["mean_tbt_ms"].get<double>());
  }
  ASSERT_EQ(sim_tbt.size(), 3u);
  EXPECT_GT(sim_tbt[1], sim_tbt[0] + 1.0) << sim_tbt[1] << " vs " << sim_tbt[0];
  EXPECT_NEAR(sim_tbt[2], sim_tbt[0], 1e-9);
  // One point per mode, folded over its three reps: the median measured TTST is the
  // unscaled record's, and the error is that of the medians.
  const nlohmann::json& points = (*report)["points"];
  ASSERT_EQ(points.size(), 2u);
  const MeasuredRecord* smartgen = nullptr;
  for (const MeasuredRecord& r : point) {
    if (r.mode == Mode::kSmartgen) smartgen = &r;
  }
  ASSERT_NE(smartgen, nullptr);
  bool seen = false;
  for (const nlohmann::json& p : points) {
    EXPECT_EQ(p["n"].get<int>(), 3) << p.dump();
    if (p["mode"] != "smartgen") continue;
    seen = true;
    EXPECT_NEAR(p["measured"]["ttst_ms"].get<double>(), smartgen->ttst_ms, 1e-9);
    std::vector<double> sim;
    for (const nlohmann::json& row : rows) {
      if (row["mode"] == "smartgen") sim.push_back(row["simulated"]["ttst_ms"].get<double>());
    }
    std::sort(sim.begin(), sim.end());
    EXPECT_NEAR(p["simulated"]["ttst_ms"].get<double>(), sim[1], 1e-9);
    EXPECT_NEAR(p["error"]["ttst"].get<double>(), sim[1] / smartgen->ttst_ms - 1.0, 1e-9);
  }
  EXPECT_TRUE(seen);
  // Per record, the 0.5x and 3x requests are far off; per point, one median against another.
  EXPECT_EQ((*report)["summary"]["smartgen"]["ttst"]["n"].get<int>(), 3);
  EXPECT_EQ((*report)["point_summary"]["smartgen"]["ttst"]["n"].get<int>(), 1);
  EXPECT_LT((*report)["summary"]["smartgen"]["ttst"]["within_15pct"].get<double>(), 0.5);
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
  v.smartgen.first_wait_ms = 15;  // the default when these runs were recorded (now 8)
  v.cpu = *HardwareByName("cpu");
  v.cpu.first_touch_bytes_per_s = 3.0e9;  // the engine of 2026-11-30 (one-chunk prefill)
  v.stats = *SelectionStatsByName("random-weights-2026-11-30");
  v.smartgen = *ParseSmartgenSimOptions(LegacyNodeOptions());  // the node of 2026-11-30
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

TEST(SimValidation, FreshSweepTransferBoundFiguresAgreeWithin15Percent) {
  // The node after issue 15 on a loaded machine: what the link decides agrees; SmartGen's
  // tens-of-ms TTST and TBT are the load's (docs/RESULTS.md), and are not asserted here.
  auto records = ReadMeasuredRecords(std::string(SMARTGEN_SOURCE_DIR) + "/tests/sim/data/ttst_sweep_2026-12-01.jsonl");
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 33u);
  ValidationOptions v = ReplayOwn(15);
  auto report = Validate(*records, v);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  int checked = 0;
  for (const nlohmann::json& row : (*report)["records"]) {
    const std::string mode = row["mode"];
    SCOPED_TRACE(row.dump());
    if (mode == "full" || mode == "layerwise") {
      EXPECT_LE(Err(row, "time_to_exact"), 0.15);
      EXPECT_LE(Err(row, "e2e"), 0.15);
      // Token 2 waits for the transfer left after prefill: where that is most of it.
      if (mode == "full" || row["measured_R"].get<double>() >= 1.3) {
        EXPECT_LE(Err(row, "ttst"), 0.15);
      }
      ++checked;
    }
    if (mode == "smartgen" && row["measured"]["time_to_exact_ms"].is_number()) {
      EXPECT_LE(Err(row, "time_to_exact"), 0.15);
      EXPECT_NEAR(row["simulated"]["bytes_over_full"].get<double>(), row["measured"]["bytes_over_full"].get<double>(), 0.01);
    }
  }
  EXPECT_EQ(checked, 13);
}

TEST(SimValidation, QuietSweepAgreesExceptSmartgensTokenTwo) {
  // The quiet sweep of docs/RESULTS.md ("Validation after the step's phases were measured"):
  // every transfer-bound figure within 15 %, SmartGen's TBT within 16 %, and SmartGen's TTST
  // below the measurement by up to 45 % (2048 tokens, R = 1): the part of token 2 the
  // simulator does not yet explain (issue 13, outcome 1).
  auto records = ReadMeasuredRecords(std::string(SMARTGEN_SOURCE_DIR) +
                                     "/tests/sim/data/ttst_sweep_quiet_2026-12-01.jsonl");
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 40u);
  ValidationOptions v = ReplayOwn();
  auto report = Validate(*records, v);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  int smartgen = 0;
  for (const nlohmann::json& row : (*report)["records"]) {
    const std::string mode = row["mode"];
    SCOPED_TRACE(row.dump());
    EXPECT_LE(Err(row, "e2e"), 0.15);
    if (mode == "colocated" || mode == "full" ||
        (mode == "layerwise" && row["ratio"].get<double>() != 1.0)) {
      EXPECT_LE(Err(row, "ttst"), 0.15);
    }
    if (mode == "full" || mode == "layerwise") {
      EXPECT_LE(Err(row, "time_to_exact"), 0.15);
    }
    if (mode != "smartgen") continue;
    ++smartgen;
    EXPECT_LE(Err(row, "mean_tbt"), 0.16);
    const double ttst = row["error"]["ttst"].get<double>();
    EXPECT_LE(ttst, 0.10);
    // -0.45: since the node's own proactive budget is replayed (the records list
    // proactive_ratio 0), 2048 tokens at R = 1 is 40.3 % low.
    EXPECT_GE(ttst, -0.45);
    // 0.05: at R = 1 the simulated request turns exact just before its last token, the
    // measured one ended with 1.3 % of its KV still to come.
    EXPECT_NEAR(row["simulated"]["bytes_over_full"].get<double>(),
                row["measured"]["bytes_over_full"].get<double>(), 0.05);
  }
  EXPECT_EQ(smartgen, 10);
}

// stories260K (trained weights) through the serving path: its SmartGen record carries the
// node's per-step selection statistics, which the simulator replays.
ModelShape Stories260k() {
  ModelShape s;  // the GGUF's metadata (../shared/models/stories260K.gguf)
  s.name = "stories260k";
  s.n_layers = 5;
  s.n_embd = 64;
  s.n_heads = 8;
  s.n_kv_heads = 4;
  s.head_dim = 8;
  s.n_ff = 172;
  s.n_vocab = 512;
  s.weight_bytes_per_param = 4;
  return s;
}

TEST(SimValidation, ReplaysTheRecordedSelectionsOfAStories260kRun) {
  auto records = ReadMeasuredRecords(std::string(SMARTGEN_SOURCE_DIR) +
                                     "/tests/sim/data/stories260k_r4_2026-12-01.jsonl");
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 3u);
  const MeasuredRecord& sg = (*records)[2];
  ASSERT_EQ(sg.mode, Mode::kSmartgen);
  ASSERT_TRUE(sg.selection.contains("selection_fresh_per_step"));
  ValidationOptions v = ReplayOwn(15);
  v.shape = Stories260k();
  auto report = Validate(*records, v);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const nlohmann::json& rows = (*report)["records"];
  EXPECT_EQ(rows[2]["selection_stats"], "replay");
  // Layer-wise: the transfer through the engine's token bucket (its 64 KiB burst is a quarter
  // of this KV), within 15 %.
  EXPECT_LE(Err(rows[1], "ttst"), 0.15) << rows[1].dump();
  EXPECT_LE(Err(rows[1], "time_to_exact"), 0.15) << rows[1].dump();
  // SmartGen: token 2 after the first-step wait and the mean TBT with its bounded waits agree
  // within 25 % here (not the 15 % target: docs/RESULTS.md says where it misses); neither
  // run became exact.
  EXPECT_LE(Err(rows[2], "ttst"), 0.25) << rows[2].dump();
  EXPECT_LE(Err(rows[2], "mean_tbt"), 0.25) << rows[2].dump();
  EXPECT_TRUE(rows[2]["exact_agrees"].get<bool>());
  // Replaying the node's share of never-selected blocks (4.9 % per step) instead of its churn
  // against the previous step (19.5 %, blocks that come back count as new) never fetches more
  // on demand. (Since the layers also wait for earlier steps' fetches still in flight, as the
  // node's do, the steps are longer, the link-sized fetch cap with them, and both fetch about
  // the same 38.5 KB here, against the node's 29 KB.)
  MeasuredRecord churn_only = sg;
  churn_only.selection.erase("selection_fresh_per_step");
  churn_only.selection.erase("selection_fresh");
  std::vector<MeasuredRecord> two = {(*records)[0], churn_only};
  auto churn_report = Validate(two, v);
  ASSERT_TRUE(churn_report.ok());
  const double fresh_od = rows[2]["simulated"]["bytes"]["on_demand"].get<double>();
  const double churn_od = (*churn_report)["records"][1]["simulated"]["bytes"]["on_demand"].get<double>();
  EXPECT_LE(fresh_od, churn_od + 512.0);  // within one block
}

// kv-retrieval-tiny (trained weights, a retrieval task where step 2 decides the answer): the
// quiet run's per-mode records over 200 prompts at 1024 and 2032 tokens, R = 4.
ModelShape KvRetrievalTiny() {
  ModelShape s;  // the GGUF's metadata (../shared/models/kv-retrieval-tiny.gguf), all f32
  s.name = "kv-retrieval-tiny";
  s.n_layers = 2;
  s.n_embd = 128;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.head_dim = 32;
  s.n_ff = 384;
  s.n_vocab = 616;
  s.weight_bytes_per_param = 4;
  return s;
}

TEST(SimValidation, ReplaysAKvRetrievalRunAndShowsWhereItsTtstGoes) {
  auto records = ReadMeasuredRecords(std::string(SMARTGEN_SOURCE_DIR) +
                                     "/tests/sim/data/kv_retrieval_tiny_r4_2026-12-01.jsonl");
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 6u);
  ValidationOptions v = ReplayOwn(15);
  v.shape = KvRetrievalTiny();
  v.cpu.wait_overrun_s = 0.08e-3;  // recorded before the decode thread's timer slack was 1 us
  auto report = Validate(*records, v);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  v.burst_bytes = 0;  // the links without the engine bucket's burst
  auto no_burst = Validate(*records, v);
  ASSERT_TRUE(no_burst.ok());
  int smartgen = 0;
  for (std::size_t i = 0; i < records->size(); ++i) {
    const nlohmann::json& row = (*report)["records"][i];
    const nlohmann::json& nb = (*no_burst)["records"][i];
    SCOPED_TRACE(row.dump());
    if (row["mode"] == "layerwise") {
      EXPECT_LE(Err(row, "ttst"), 0.15);  // the transfer left after the prefill
      EXPECT_LE(Err(nb, "ttst"), 0.15);
    }
    if (row["mode"] != "smartgen") continue;
    ++smartgen;
    EXPECT_EQ(row["selection_stats"], "replay");
    EXPECT_LE(Err(row, "mean_tbt"), 0.3);
    EXPECT_NEAR(row["simulated"]["bytes_over_full"].get<double>(),
                row["measured"]["bytes_over_full"].get<double>(), 0.1);
    // Token 2 waits for the prefill node's first-step push (step 1 selects it). The engine's
    // bucket, refilled since the last proactive push, lets the simulated push leave at once
    // (token 2 within a few ms of token 1, a fraction of the measured 3.3 / 10.3 ms); pushed
    // at the link rate it lands about when the measured token 2 came. Which link-rate cost the
    // node really pays there is open (docs/RESULTS.md, "Replay of recorded per-step
    // selections"): this pins the gap and the size of the missing cost.
    EXPECT_LT(row["simulated"]["ttst_ms"].get<double>(),
              0.5 * row["measured"]["ttst_ms"].get<double>());
    EXPECT_LE(Err(nb, "ttst"), 0.3);
  }
  EXPECT_EQ(smartgen, 2);
}

TEST(SimValidation, ReplaysThreePointsOfTheZen5SweepPerPoint) {
  // Three requests per mode at three points of the 2026-12-02 sweep (docs/RESULTS.md,
  // "Validation on AMD EPYC Zen 5"). Per point, the medians agree within 15 % for every mode
  // and figure except SmartGen's TTST at 2048 tokens, R = 2, where the node's first step costs
  // more than its later ones beyond its waits: the sweep recorded neither the steps' durations
  // nor their phases, so neither the cold read nor the first selection is fitted, and the CPU
  // preset's first selection (1.6 ms, measured on a later VM) leaves it 5-30 % low, pinned
  // below. Without that preset figure R = 1 read 10 % low, R = 2 21 %.
  auto records = ReadMeasuredRecords(std::string(SMARTGEN_SOURCE_DIR) +
                                     "/tests/sim/data/sim_validate_zen5_2026-12-02.jsonl");
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 36u);
  auto report = Validate(*records, ReplayOwn());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  // The colocated first steps are 0.0-1.2 ms longer than their median ones: a first-touch
  // rate far above the preset's 26 GB/s (which overstated colocated TTST by 10-21 % here).
  EXPECT_GT((*report)["fitted"]["first_touch_bytes_per_s"].get<double>(), 60e9);
  const nlohmann::json& points = (*report)["points"];
  ASSERT_EQ(points.size(), 12u);
  int low = 0;
  for (const nlohmann::json& p : points) {
    SCOPED_TRACE(p.dump());
    EXPECT_EQ(p["n"].get<int>(), 3);
    EXPECT_LE(Err(p, "mean_tbt"), 0.15);
    if (p["mode"] != "colocated") {
      EXPECT_LE(Err(p, "e2e"), 0.15);
    }
    if (p["mode"] == "full" || p["mode"] == "layerwise") {
      EXPECT_LE(Err(p, "time_to_exact"), 0.15);
    }
    if (p["mode"] == "smartgen" && p["prompt_tokens"] == 2048 && p["ratio"] == 2.0) {
      const double e = p["error"]["ttst"].get<double>();
      EXPECT_LT(e, -0.05);
      EXPECT_GT(e, -0.30);
      ++low;
    } else {
      EXPECT_LE(Err(p, "ttst"), 0.15);
    }
  }
  EXPECT_EQ(low, 1);
}

TEST(SimValidation, ACalibratedColdFirstStepBringsSmartgensTtstWithin15PercentPerPoint) {
  // Three points of the 2026-12-04 sweep on the paravirtualised VM (docs/RESULTS.md,
  // "Validation with a cold first step"), three requests per mode, the modes of a repetition
  // back to back. The decode engine recorded every step's duration: the full and layerwise
  // first steps (a node that sat idle waiting for its KV) calibrate the cold-read cost, which
  // SmartGen's TTST is then checked against; without it SmartGen's TTST reads low.
  auto records = ReadMeasuredRecords(std::string(SMARTGEN_SOURCE_DIR) +
                                     "/tests/sim/data/sim_validate_vm_2026-12-04.jsonl");
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 36u);
  int with_steps = 0;
  for (const MeasuredRecord& r : *records) with_steps += r.first_step_excess_ms >= 0 ? 1 : 0;
  EXPECT_EQ(with_steps, 36);
  auto report = Validate(*records, ReplayOwn());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const double cold = (*report)["fitted"]["cold_read_bytes_per_s"].get<double>();
  EXPECT_GT(cold, 20e9);   // 1-4 ms for SmolLM2-135M F16's 270 MB of weights
  EXPECT_LT(cold, 400e9);
  ValidationOptions warm = ReplayOwn();
  warm.cpu.cold_read_bytes_per_s = 0;
  auto without = Validate(*records, warm);
  ASSERT_TRUE(without.ok()) << without.status().ToString();
  int smartgen = 0;
  for (std::size_t i = 0; i < (*report)["points"].size(); ++i) {
    const nlohmann::json& p = (*report)["points"][i];
    const nlohmann::json& q = (*without)["points"][i];
    SCOPED_TRACE(p.dump());
    ASSERT_EQ(p["mode"], q["mode"]);
    EXPECT_LE(Err(p, "ttst"), 0.15);
    EXPECT_LE(Err(p, "mean_tbt"), 0.15);
    if (p["mode"] != "smartgen") continue;
    ++smartgen;
    EXPECT_LT(q["error"]["ttst"].get<double>(), p["error"]["ttst"].get<double>() - 0.05);
  }
  EXPECT_EQ(smartgen, 3);
}

TEST(SimValidation, ReplayTakesEveryStepsRecordedAbsentShare) {
  nlohmann::json record = {{"on_demand_ratio_per_step", {0.25, 0.0, 0.5}}};
  auto s = SelectionStatsFromRecord(record, *SelectionStatsByName("random-weights"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_DOUBLE_EQ(s->Absent(1), 0.25);
  EXPECT_DOUBLE_EQ(s->Absent(2), 0.0);
  EXPECT_DOUBLE_EQ(s->Absent(3), 0.5);
  EXPECT_DOUBLE_EQ(s->Absent(4), -1);  // beyond the record: the model decides
  EXPECT_DOUBLE_EQ(s->Absent(0), -1);
  record["on_demand_ratio_per_step"] = {0.1, "x"};
  EXPECT_FALSE(SelectionStatsFromRecord(record, *SelectionStatsByName("random-weights")).ok());
}

TEST(SimValidation, AColocatedRecordsPrefillIsItsOwnTtftNotThePointsCalibration) {
  // bench ttst sizes a point's link from one calibration prefill and writes that prefill into
  // the colocated records, which have no prefill node to report their own (2026-12-04 22:21:
  // 8726 ms where the 20 requests' own took 4939-8026). Their own is their TTFT.
  const std::string path = ::testing::TempDir() + "colocated_prefill.jsonl";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::string tokens;
    for (int i = 0; i < 24; ++i) tokens += (i ? "," : "") + std::to_string(5100.0 + 13.0 * i);
    std::fprintf(f,
                 R"({"mode":"colocated","n_prompt":4096,"target_R":1,"link_gbps":0.15,"ttft_ms":5100,)"
                 R"("prefill_ms":8726,"tbt_ms":13,"e2e_ms":5399,"output_tokens":24,"token_ms":[%s]})"
                 "\n",
                 tokens.c_str());
    std::fclose(f);
  }
  auto records = ReadMeasuredRecords(path);
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  auto report = Validate(*records, ReplayOwn());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const nlohmann::json& row = (*report)["records"][0];
  EXPECT_NEAR(row["simulated"]["ttft_ms"].get<double>(), 5100, 5100 * 0.01) << row.dump();
  EXPECT_LE(Err(row, "e2e"), 0.02);
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
