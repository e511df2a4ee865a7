// Mode timelines on cases that can be computed by hand from the cost model and the link.
#include <gtest/gtest.h>

#include "select/path_sizing.h"
#include "select/proactive.h"
#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/report.h"
#include "sim_test_util.h"

namespace smartgen::sim {
namespace {

using testing::GbpsForRatio;
using testing::OnePairSpec;
using testing::RunOne;
using testing::ControlSeconds;
using testing::Ttft;
using testing::WireSeconds;
using testing::Ttst;

constexpr std::int64_t kPrompt = 2048;  // a multiple of the block size: no padding

TEST(SimModes, ColocatedIsPrefillThenDenseSteps) {
  const ClusterSpec spec = OnePairSpec(Mode::kColocated, 1);
  const SimResult res = RunOne(spec, kPrompt, 5);
  const SimRequest& r = *res.requests[0];
  const CostModel c(spec.decode_hw, spec.model);
  EXPECT_NEAR(Ttft(r), c.Prefill(kPrompt), 1e-12);
  ASSERT_EQ(r.tokens.size(), 5u);
  for (int i = 1; i < 5; ++i) {
    EXPECT_NEAR(r.tokens[i] - r.tokens[i - 1], c.DecodeStep(1, kPrompt + i - 1), 1e-9) << i;
  }
  EXPECT_DOUBLE_EQ(r.bytes[static_cast<int>(Path::kFull)], 0);
}

TEST(SimModes, FullTtstIsBytesOverRatePlusLatencyPlusAStep) {
  const double gbps = 0.5, lat = 0.002;
  const ClusterSpec spec = OnePairSpec(Mode::kFull, gbps, lat);
  const SimResult res = RunOne(spec, kPrompt, 3);
  const SimRequest& r = *res.requests[0];
  const CostModel c(spec.decode_hw, spec.model);
  const double kv = spec.model.KvBytes(kPrompt);
  EXPECT_NEAR(Ttft(r), c.Prefill(kPrompt), 1e-12);
  // PrefillDone (64 B) overtakes the KV at its first frame boundary.
  // Both in frames with a 64-byte header each.
  const double wire = WireSeconds(spec, kv) + ControlSeconds(spec);
  EXPECT_GT(wire, (kv + 64) / (gbps * 1e9 / 8) * 1.0005);
  EXPECT_NEAR(Ttst(r), wire + lat + c.DecodeStep(1, kPrompt), 1e-9);
  EXPECT_NEAR(r.exact - r.prefill_end, wire + lat, 1e-9);
  EXPECT_NEAR(r.bytes[static_cast<int>(Path::kFull)], kv, 1e-6);
}

TEST(SimModes, ADecodeNodeThatSatIdleReadsItsWeightsColdOnItsFirstStepOnly) {
  // The CPU testbed's idle-read penalty (Hardware::cold_read_bytes_per_s): the full-mode
  // decode node waited for the KV, so its first step pays weight bytes / rate; the steps after
  // it run back to back and do not. A colocated node prefilled right before: no cold step.
  const double gbps = 0.5, lat = 0.002;
  ClusterSpec spec = OnePairSpec(Mode::kFull, gbps, lat);
  spec.decode_hw.cold_read_bytes_per_s = 50e9;
  spec.decode_hw.cold_after_s = 0.01;
  const CostModel c(spec.decode_hw, spec.model);
  ASSERT_NEAR(c.ColdStep(), spec.model.WeightBytes() / 50e9, 1e-15);
  ASSERT_GT(c.ColdStep(), 0.05 * c.DecodeStep(1, kPrompt));
  const SimResult res = RunOne(spec, kPrompt, 4);
  const SimRequest& r = *res.requests[0];
  const double kv = spec.model.KvBytes(kPrompt);
  EXPECT_NEAR(Ttst(r), WireSeconds(spec, kv) + ControlSeconds(spec) + lat + c.DecodeStep(1, kPrompt) + c.ColdStep(),
              1e-9);
  for (int i = 2; i < 4; ++i) {
    EXPECT_NEAR(r.tokens[i] - r.tokens[i - 1], c.DecodeStep(1, kPrompt + i - 1), 1e-9) << i;
  }
  ClusterSpec coloc = OnePairSpec(Mode::kColocated, 1);
  coloc.decode_hw = spec.decode_hw;
  const SimResult res2 = RunOne(coloc, kPrompt, 3);
  const SimRequest& r2 = *res2.requests[0];
  EXPECT_NEAR(Ttst(r2), c.DecodeStep(1, kPrompt), 1e-9);
}

TEST(SimModes, LayerwiseOnASlowLinkStallsForTheTransferLeftAfterPrefill) {
  ClusterSpec spec = OnePairSpec(Mode::kLayerwise, 1, 0.001);
  spec.options.link.gbps = GbpsForRatio(spec, kPrompt, 4);
  const SimResult res = RunOne(spec, kPrompt, 3);
  const SimRequest& r = *res.requests[0];
  const CostModel c(spec.prefill_hw, spec.model);
  const double kv = spec.model.KvBytes(kPrompt);
  // The link is busy from layer 0's K/V (after its QKV projection) to the last byte (R = 4:
  // it never catches up).
  const double layer0 = c.PrefillLayerKvReady(0, kPrompt);
  EXPECT_GT(layer0, 0.05 * c.PrefillLayer(0, kPrompt));
  EXPECT_LT(layer0, 0.5 * c.PrefillLayer(0, kPrompt));
  const double expected = layer0 + WireSeconds(spec, kv) + ControlSeconds(spec) + 0.001 -
                          c.Prefill(kPrompt) + c.DecodeStep(1, kPrompt);
  EXPECT_NEAR(Ttst(r), expected, 1e-9);
  // R = 0.5: the transfer hides behind prefill (the last layer's K/V leaves while that layer's
  // attention and FFN run): token 2 waits only for PrefillDone's trip.
  spec.options.link.gbps = GbpsForRatio(spec, kPrompt, 0.5);
  const SimResult fast = RunOne(spec, kPrompt, 3);
  EXPECT_NEAR(Ttst(*fast.requests[0]), ControlSeconds(spec) + 0.001 + c.DecodeStep(1, kPrompt), 1e-9);
}

TEST(SimModes, SmartgenAtLowRatioPushesEverythingProactively) {
  ClusterSpec spec = OnePairSpec(Mode::kSmartgen, 1);
  spec.options.link.gbps = GbpsForRatio(spec, kPrompt, 0.5);
  const SimResult res = RunOne(spec, kPrompt, 8);
  const SimRequest& r = *res.requests[0];
  ASSERT_GE(r.exact, 0);
  EXPECT_DOUBLE_EQ(r.exact, r.kv_ready);  // exact when decoding starts
  EXPECT_DOUBLE_EQ(r.bytes[static_cast<int>(Path::kOnDemand)], 0);
  kv::KvGeometry g;
  g.n_layers = 30;
  g.n_kv_heads = 3;
  g.head_dim = 64;
  const auto plan = select::PlanProactiveBudget(g, kPrompt, 1LL << 40, nullptr, {});
  EXPECT_NEAR(r.bytes[static_cast<int>(Path::kSummary)], static_cast<double>(plan.summary_bytes), 1);
  EXPECT_NEAR(r.bytes[static_cast<int>(Path::kProactive)], r.full_kv_bytes, 1);
}

TEST(SimModes, SmartgenCutsTtstAtHighRatioAndCancelsTheRest) {
  // R = 8 and 16 tokens: the request ends well before the link could carry the rest.
  ClusterSpec spec = OnePairSpec(Mode::kSmartgen, 1);
  spec.options.link.gbps = GbpsForRatio(spec, kPrompt, 8);
  const SimResult sg = RunOne(spec, kPrompt, 16);
  spec.options.mode = Mode::kLayerwise;
  const SimResult lw = RunOne(spec, kPrompt, 16);
  const SimRequest& s = *sg.requests[0];
  const SimRequest& l = *lw.requests[0];
  EXPECT_LT(Ttst(s), 0.3 * Ttst(l));
  // The proactive set is the select policy's budget: 0.85 of the link during prefill.
  const CostModel c(spec.prefill_hw, spec.model);
  const double budget = 0.85 * spec.options.link.gbps * 1e9 / 8 * c.Prefill(kPrompt);
  const double pushed = s.bytes[static_cast<int>(Path::kSummary)] + s.bytes[static_cast<int>(Path::kProactive)];
  EXPECT_LE(pushed, budget + 1);
  EXPECT_GT(pushed, budget - 30 * 3 * 4096.0);  // within a block per (layer, head)
  EXPECT_GT(s.bytes[static_cast<int>(Path::kOnDemand)], 0);
  // The request ends before the stream: fewer bytes than the full KV, the rest never sent.
  const nlohmann::json rec = RequestRecord(s);
  EXPECT_LT(rec["bytes_over_full"].get<double>(), 1.0);
  EXPECT_GT(s.cancelled_bytes, 0);
  EXPECT_LT(s.exact, 0);
}

TEST(SimModes, OnlyARequestsFirstSelectiveStepPaysTheFirstSelection) {
  // Hardware::first_select_extra: the node's first scoring pass over summaries that just
  // landed. No fetches (they would overlap it): token 2 is later by 1.5 x its scoring, the
  // steps after are not (but for what the stream landed meanwhile: microseconds).
  ClusterSpec spec = OnePairSpec(Mode::kSmartgen, 1);
  spec.options.link.gbps = GbpsForRatio(spec, kPrompt, 8);
  spec.options.smartgen.fetch_on_demand = false;
  const SimResult base = RunOne(spec, kPrompt, 6);
  spec.decode_hw.first_select_extra = 1.5;
  const SimResult first = RunOne(spec, kPrompt, 6);
  const SimRequest& a = *base.requests[0];
  const SimRequest& b = *first.requests[0];
  ASSERT_LT(b.exact, 0);  // every step selective
  const CostModel c(spec.decode_hw, spec.model);
  const double scoring = spec.model.n_layers * c.SelectCost(b.kv->n_prompt_blocks());
  ASSERT_GT(scoring, 0.1e-3);
  EXPECT_NEAR(Ttst(b) - Ttst(a), 1.5 * scoring, 1e-9);
  for (int i = 2; i < 6; ++i) {
    EXPECT_NEAR(b.tokens[i] - b.tokens[i - 1], a.tokens[i] - a.tokens[i - 1], 1e-5) << i;
  }
}

TEST(SimModes, ASelectiveLayersLocalAttentionRunsAtItsOwnRate) {
  // Hardware::local_attention_bytes_per_s: the present blocks' K/V read as the layer's own phase.
  // At the dense rate and no fixed cost the timeline is the one without it; at half the rate
  // and 10 us a layer, token 2 is later by 30 x 10 us and the present blocks' second read.
  ClusterSpec spec = OnePairSpec(Mode::kSmartgen, 1);
  spec.options.link.gbps = GbpsForRatio(spec, kPrompt, 2);
  spec.options.smartgen.fetch_on_demand = false;  // no waits: the steps are their compute
  spec.decode_hw.attention_bytes_per_s = 10e9;     // attention as its own phase, as on the CPU
  const SimResult base = RunOne(spec, kPrompt, 4);
  spec.decode_hw.local_attention_bytes_per_s = spec.decode_hw.attention_bytes_per_s;
  const SimResult same = RunOne(spec, kPrompt, 4);
  spec.decode_hw.local_attention_bytes_per_s /= 2;
  spec.decode_hw.local_attention_layer_s = 10e-6;
  const SimResult slow = RunOne(spec, kPrompt, 4);
  const SimRequest& a = *base.requests[0];
  ASSERT_LT(a.exact, 0);  // every step selective
  for (std::size_t i = 0; i < a.tokens.size(); ++i) {
    EXPECT_NEAR(same.requests[0]->tokens[i], a.tokens[i], 1e-12) << i;
  }
  const CostModel c(spec.decode_hw, spec.model);
  const double extra = Ttst(*slow.requests[0]) - Ttst(a);
  const double present_reread = extra - 30 * 10e-6;  // the present blocks at the dense rate again
  EXPECT_GT(present_reread, 0.1 * 30 * c.DecodeAttention(kPrompt));
  EXPECT_LT(present_reread, 30 * c.DecodeAttention(kPrompt + 1));
}

TEST(SimModes, SmartgenBecomesExactWithALongOutput) {
  ClusterSpec spec = OnePairSpec(Mode::kSmartgen, 1);
  spec.options.smartgen = *ParseSmartgenSimOptions(LegacyNodeOptions());
  spec.options.link.gbps = GbpsForRatio(spec, kPrompt, 4);
  const SimResult sg = RunOne(spec, kPrompt, 2000);
  const SimRequest& s = *sg.requests[0];
  ASSERT_GE(s.exact, 0);
  spec.options.mode = Mode::kLayerwise;
  const SimResult lw = RunOne(spec, kPrompt, 3);
  // Exact soon after layerwise's transfer completes; every byte once plus summaries and the
  // few duplicates of blocks fetched while their speculative batch was on the wire.
  EXPECT_LT(s.exact, 1.15 * lw.requests[0]->exact);
  const double over = RequestRecord(s)["bytes_over_full"].get<double>();
  EXPECT_GT(over, 1.0);
  EXPECT_LT(over, 1.06);
  // After exact the steps are dense: the last gaps are colocated-speed steps.
  const CostModel c(spec.decode_hw, spec.model);
  EXPECT_NEAR(s.tokens.back() - s.tokens[s.tokens.size() - 2], c.DecodeStep(1, kPrompt + 1998), 1e-9);
}

TEST(SimModes, BytesLandingWhileAStepComputesCostItTheTransfersCpu) {
  ClusterSpec spec = OnePairSpec(Mode::kSmartgen, 1);
  spec.options.smartgen = *ParseSmartgenSimOptions(LegacyNodeOptions());
  spec.options.link.gbps = GbpsForRatio(spec, kPrompt, 4);
  const SimResult free_cpu = RunOne(spec, kPrompt, 2000);
  spec.decode_hw.transfer_cpu_s_per_byte = 2e-9;  // 2 ms per MB
  const SimResult shared = RunOne(spec, kPrompt, 2000);
  const SimRequest& a = *free_cpu.requests[0];
  const SimRequest& b = *shared.requests[0];
  ASSERT_GE(b.exact, 0);
  // Every byte sent for the request landed on the decode node (it became exact).
  double sent = 0;
  for (double x : b.bytes) sent += x;
  EXPECT_NEAR(b.landed_bytes, sent, 1e-6 * sent);
  // Decoding took longer, by no more than the CPU of every byte that landed.
  const double decode_a = a.done - a.tokens[0], decode_b = b.done - b.tokens[0];
  EXPECT_GT(decode_b, decode_a);
  EXPECT_LT(decode_b - decode_a, b.landed_bytes * spec.decode_hw.transfer_cpu_s_per_byte);
  // Once exact, nothing lands: the last steps are dense steps at full speed.
  const CostModel c(spec.decode_hw, spec.model);
  EXPECT_NEAR(b.tokens.back() - b.tokens[b.tokens.size() - 2], c.DecodeStep(1, kPrompt + 1998), 1e-9);
  // A dense mode's transfer ends before decoding: its steps pay nothing.
  spec.options.mode = Mode::kFull;
  const SimResult full = RunOne(spec, kPrompt, 8);
  spec.decode_hw.transfer_cpu_s_per_byte = 0;
  const SimResult full_free = RunOne(spec, kPrompt, 8);
  EXPECT_DOUBLE_EQ(full.requests[0]->done, full_free.requests[0]->done);
}

TEST(SimModes, BoundedWaitKeepsStepsWithinTheNodesBoundAndLeavesLateBlocksOut) {
  ClusterSpec spec = OnePairSpec(Mode::kSmartgen, 1);
  spec.options.link.gbps = GbpsForRatio(spec, kPrompt, 4);
  spec.options.smartgen.wait_bound_ms = kWaitUntilLandedMs;
  const SimResult landed = RunOne(spec, kPrompt, 64);
  spec.options.smartgen.wait_bound_ms = -1;  // the node's auto bound (the default)
  const SimResult bounded = RunOne(spec, kPrompt, 64);
  const nlohmann::json a = RequestRecord(*landed.requests[0]);
  const nlohmann::json b = RequestRecord(*bounded.requests[0]);
  const CostModel c(spec.decode_hw, spec.model);
  EXPECT_LT(b["mean_tbt_ms"].get<double>(), a["mean_tbt_ms"].get<double>());
  // A step takes at most (1 + wait_share) x its own time + step_slack_ms (select/path_sizing.h);
  // its own time: the dense step plus scoring the summaries of every layer.
  const double own_ms = (c.DecodeStep(1, kPrompt + 64) + 30 * c.SelectCost(kPrompt / 16)) * 1e3;
  EXPECT_LT(b["mean_tbt_ms"].get<double>(), 1.15 * own_ms + 3.0 + 0.05 * 30);
  EXPECT_NEAR(a["present_share"].get<double>(), 1.0, 1e-9);
  EXPECT_LT(b["present_share"].get<double>(), 1.0);
  EXPECT_GT(b["present_share"].get<double>(), 0.5);
}

TEST(SimModes, ALayerWaitsOnlyWhereTheStepsAbsentBlocksMakeAWholeOne) {
  // Late in a request a step misses a few blocks over all 30 layers. On the node a few layers
  // miss a whole block and wait a round trip for it; the others miss none and do not wait
  // (DecodeNode::Fetch carries the slivers of expected demand until they make a block).
  constexpr double kOneWay = 0.002;
  ClusterSpec spec = OnePairSpec(Mode::kSmartgen, 1, kOneWay);
  spec.options.link.gbps = GbpsForRatio(spec, kPrompt, 2);
  spec.options.smartgen.wait_bound_ms = kWaitUntilLandedMs;
  spec.options.smartgen.predict_next = false;
  const SimResult result = RunOne(spec, kPrompt, 48);
  const SimRequest& r = *result.requests[0];
  ASSERT_EQ(r.stall_per_step_s.size(), r.requested_per_step.size());
  const double rate = spec.options.link.gbps * 1e9 / 8;
  int sliver_steps = 0;
  double sliver_stall = 0;
  for (std::size_t i = 1; i < r.requested_per_step.size(); ++i) {
    const double asked = r.requested_per_step[i];
    if (asked <= 0 || asked >= spec.model.n_layers / 3.0) continue;
    ++sliver_steps;
    sliver_stall += r.stall_per_step_s[i];
    // At most one waiting layer per whole block asked, plus one for the carry from the step
    // before; each waits a round trip, a frame ahead of it on the wire and its blocks.
    const double per_layer = 2 * kOneWay + (EngineFrameBytes(spec.options.link.gbps) + (asked + 1) * r.block_bytes) / rate;
    EXPECT_LE(r.stall_per_step_s[i], (std::floor(asked) + 1) * per_layer + 1e-9) << "step " << i + 1;
  }
  ASSERT_GE(sliver_steps, 10);
  // Every layer waiting a round trip would have cost this much.
  EXPECT_LT(sliver_stall, 0.25 * sliver_steps * spec.model.n_layers * 2 * kOneWay);
  EXPECT_GT(sliver_stall, 0);
  // No block is lost: what was asked for was pulled, or is still carried.
  double asked = 0;
  for (double q : r.requested_per_step) asked += q;
  EXPECT_NEAR(r.bytes[static_cast<int>(Path::kOnDemand)] / r.block_bytes + r.carry, asked, 1e-6 * asked);
}

TEST(SimModes, AFetchOverlapsOnlyTheLayersAttentionNotItsWeightProducts) {
  // As on the node (node/decode/smartgen_session.cc): a layer asks for its missing blocks after
  // the QKV projection and scoring, waits after local attention, and runs the output
  // projection and FFN after the wait. With fetches far longer than a layer (2 ms one way),
  // a slower decode node then adds its whole weight-product time to token 2, not only the
  // output head's.
  ClusterSpec spec = OnePairSpec(Mode::kSmartgen, 1, 0.002);
  spec.options.link.gbps = GbpsForRatio(spec, kPrompt, 8);
  spec.options.smartgen.first_step = false;
  spec.options.smartgen.speculative = false;
  spec.options.smartgen.predict_next = false;
  spec.options.smartgen.wait_bound_ms = kWaitUntilLandedMs;
  const SimResult fast = RunOne(spec, kPrompt, 2);
  const CostModel cf(spec.decode_hw, spec.model);
  spec.decode_hw.mem_bytes_per_s /= 2;
  const SimResult slow = RunOne(spec, kPrompt, 2);
  const CostModel cs(spec.decode_hw, spec.model);
  double linear = cs.DecodeOutput(1) - cf.DecodeOutput(1);
  for (int l = 0; l < spec.model.n_layers; ++l) {
    const CostModel::LayerPhases a = cf.DecodeLayerPhases(1, 0), b = cs.DecodeLayerPhases(1, 0);
    linear += (b.qkv + b.rest) - (a.qkv + a.rest);
  }
  ASSERT_GT(fast.requests[0]->stall_s, 0.02);  // every layer waited on the link
  EXPECT_NEAR(Ttst(*slow.requests[0]) - Ttst(*fast.requests[0]), linear, 0.05 * linear);
  // The phases add up to the layer.
  const CostModel::LayerPhases p = cf.DecodeLayerPhases(1, 3000);
  EXPECT_NEAR(p.qkv + p.attention + p.rest, cf.DecodeLayer(1, 3000), 1e-15);
  EXPECT_NEAR(p.attention, cf.DecodeAttention(3000), 1e-12);
  const ModelShape& m = spec.model;
  EXPECT_NEAR(p.qkv / (p.qkv + p.rest), m.n_embd * (m.q_dim() + 2.0 * m.kv_dim()) / m.LayerParams(), 1e-12);
}

TEST(SimModes, PredictionsAreCheckedBeforeTheyFetchAndTheirMissesLandAsPresentBlocks) {
  ClusterSpec spec = OnePairSpec(Mode::kSmartgen, 1);
  spec.options.link.gbps = GbpsForRatio(spec, kPrompt, 4);
  spec.stats.predictor_hit = 0.4;  // below select::kPredictionMinHitRate: checked, never fetched
  const nlohmann::json low = RequestRecord(*RunOne(spec, kPrompt, 16).requests[0]);
  EXPECT_GE(low["predicted_blocks"].get<double>(), select::kPredictionWarmupBlocks);
  EXPECT_EQ(low["predicted_fetched_blocks"].get<double>(), 0);
  EXPECT_EQ(low["mispredicted_blocks"].get<double>(), 0);
  spec.stats.predictor_hit = 0.6;
  const nlohmann::json hit = RequestRecord(*RunOne(spec, kPrompt, 16).requests[0]);
  const double fetched = hit["predicted_fetched_blocks"].get<double>();
  EXPECT_GT(fetched, 0);
  // The warm-up's guesses were scored, not fetched.
  EXPECT_LE(fetched, hit["predicted_blocks"].get<double>() - select::kPredictionWarmupBlocks + 1e-9);
  // asked x (1 - hit) of them were no step's choice, fetched all the same.
  EXPECT_NEAR(hit["mispredicted_blocks"].get<double>(), 0.4 * fetched, 0.05 * fetched);
  spec.options.smartgen.predict_next = false;
  const nlohmann::json off = RequestRecord(*RunOne(spec, kPrompt, 16).requests[0]);
  EXPECT_EQ(off["predicted_blocks"].get<double>(), 0);
}

TEST(SimCost, AttentionAsItsOwnPhaseAddsToTheWeightRoofline) {
  Hardware h = testing::IdealNode();
  const ModelShape m = *ModelShapeByName("smollm2-135m");
  const CostModel fused(h, m);
  h.attention_bytes_per_s = 10e9;
  const CostModel split(h, m);
  EXPECT_DOUBLE_EQ(split.DecodeAttention(1000), m.KvBytesPerTokenLayer() * 1000 / 10e9);
  EXPECT_NEAR(split.DecodeLayer(1, 1000) - split.DecodeLayer(1, 0), split.DecodeAttention(1000),
              1e-12);
  EXPECT_NEAR(fused.DecodeLayer(1, 0), split.DecodeLayer(1, 0), 1e-12);  // the weights alike
  EXPECT_DOUBLE_EQ(fused.DecodeAttention(1000),
                   m.KvBytesPerTokenLayer() * 1000 / h.mem_bytes_per_s);
}

TEST(SimModes, FirstStepRunsOnThePrefillNodeAndPushesWhatTheLinkCarriesInTheWait) {
  ClusterSpec spec = OnePairSpec(Mode::kSmartgen, 1);
  spec.options.link.gbps = GbpsForRatio(spec, kPrompt, 4);
  // A wait long enough that the link's share, not the one-block-per-(layer, head) floor, sizes it.
  spec.options.smartgen.first_wait_ms = 15;
  const SimResult with = RunOne(spec, kPrompt, 8);
  spec.options.smartgen.first_step = false;
  const SimResult without = RunOne(spec, kPrompt, 8);
  const SimRequest& w = *with.requests[0];
  const SimRequest& wo = *without.requests[0];
  const CostModel c(spec.prefill_hw, spec.model);
  // Token 1 leaves after the first step: one decode step on a copy of the KV.
  EXPECT_NEAR(Ttft(w) - Ttft(wo), c.FirstStepOnPrefill(kPrompt, w.full_kv_bytes), 1e-9);
  const double first = w.bytes[static_cast<int>(Path::kFirstStep)];
  const double bps = spec.options.link.gbps * 1e9 / 8;
  EXPECT_GT(first, 0);
  EXPECT_LE(first, bps * spec.options.smartgen.first_wait_ms / 1e3 + 1);  // select::FirstStepBlocks
  EXPECT_DOUBLE_EQ(wo.bytes[static_cast<int>(Path::kFirstStep)], 0);
  // The steps find more of their selection on the node when they attend.
  EXPECT_GT(RequestRecord(w)["present_share"].get<double>(), RequestRecord(wo)["present_share"].get<double>());
}

TEST(SimModes, FirstStepStartsDecodingAtTheFirstWaitWithProactiveBlocksStillOnTheLink) {
  // A proactive set of the whole KV at R = 8 is still on the link long after prefill.
  ClusterSpec spec = OnePairSpec(Mode::kSmartgen, 1);
  spec.options.link.gbps = GbpsForRatio(spec, kPrompt, 8);
  spec.options.smartgen.proactive_ratio = 0.5;  // budget = 2 x the KV: all of it
  const SimResult with = RunOne(spec, kPrompt, 4);
  const SimRequest& w = *with.requests[0];
  EXPECT_NEAR(w.kv_ready, w.prefill_done_at + spec.options.smartgen.first_wait_ms / 1e3, 1e-9);
  spec.options.smartgen.first_step = false;  // waits for every proactive block
  const SimResult without = RunOne(spec, kPrompt, 4);
  EXPECT_GT(without.requests[0]->kv_ready, w.kv_ready + 1.0);
  EXPECT_LT(Ttst(w), 0.2 * Ttst(*without.requests[0]));
}

TEST(SimModes, AttendPresentReadsEveryPresentBlock) {
  // At R = 2 the proactive set is 40 % of the KV: attending over it costs more than over the
  // selection on a memory-bound decode step, and nothing when every block is present.
  ClusterSpec spec = OnePairSpec(Mode::kSmartgen, 1);
  spec.options.link.gbps = GbpsForRatio(spec, kPrompt, 2);
  spec.options.smartgen.speculative = false;
  const SimResult present = RunOne(spec, kPrompt, 16);
  spec.options.smartgen.attend_present = false;
  const SimResult selected = RunOne(spec, kPrompt, 16);
  EXPECT_GT(RequestRecord(*present.requests[0])["mean_tbt_ms"].get<double>(),
            RequestRecord(*selected.requests[0])["mean_tbt_ms"].get<double>());
}

TEST(SimModes, AutoPicksLayerwiseWhenTheLinkHidesTheTransfer) {
  ClusterSpec spec = OnePairSpec(Mode::kAuto, 1);
  spec.options.link.gbps = GbpsForRatio(spec, kPrompt, 0.5);
  EXPECT_EQ(RunOne(spec, kPrompt, 3).requests[0]->mode, Mode::kLayerwise);
  spec.options.link.gbps = GbpsForRatio(spec, kPrompt, 4);
  EXPECT_EQ(RunOne(spec, kPrompt, 3).requests[0]->mode, Mode::kSmartgen);
}

TEST(SimCluster, ColocatedPrefillsStallTheBatch) {
  const ClusterSpec spec = OnePairSpec(Mode::kColocated, 1);
  const SimResult res = RunOne(spec, kPrompt, 4, 2);
  const CostModel c(spec.decode_hw, spec.model);
  const double p = c.Prefill(kPrompt);
  EXPECT_NEAR(Ttft(*res.requests[1]), 2 * p, 1e-9);
  // Request 0 waits for request 1's prefill, then both decode in one batch.
  EXPECT_NEAR(Ttst(*res.requests[0]), p + c.DecodeStep(2, kPrompt), 1e-9);
  EXPECT_NEAR(res.requests[0]->tokens[2] - res.requests[0]->tokens[1], c.DecodeStep(2, kPrompt + 1), 1e-9);
}

TEST(SimCluster, ASharedLinkSerialisesTransfersThatPairLinksRunInParallel) {
  ClusterSpec spec = OnePairSpec(Mode::kFull, 0.2, 0);
  spec.options.n_prefill = spec.options.n_decode = 2;
  const SimResult pair = RunOne(spec, kPrompt, 2, 2);
  spec.options.topology = Topology::kShared;
  const SimResult shared = RunOne(spec, kPrompt, 2, 2);
  EXPECT_EQ(pair.requests[1]->prefill_node, 1);
  EXPECT_EQ(pair.requests[1]->decode_node, 1);
  const double kv_s = WireSeconds(spec, spec.model.KvBytes(kPrompt));
  EXPECT_NEAR(Ttst(*shared.requests[1]) - Ttst(*pair.requests[1]), kv_s, 1e-3 * kv_s);
  EXPECT_NEAR(Ttst(*shared.requests[0]), Ttst(*pair.requests[0]), 1e-3 * kv_s);
  const nlohmann::json sum = Summarize(shared, {});
  EXPECT_EQ(sum["links"].size(), 1u);
  EXPECT_NEAR(sum["links"][0]["bytes"].get<double>(), 2 * spec.model.KvBytes(kPrompt) + 128, 1);
}

TEST(SimCluster, ProgressIsReportedOncePerFinishedRequest) {
  const ClusterSpec spec = OnePairSpec(Mode::kLayerwise, 1);
  WorkloadOptions w;
  w.prompt_min = w.prompt_max = 512;
  w.output_min = w.output_max = 4;
  std::vector<int> done;
  double last_t = -1;
  auto res = RunCluster(spec, Poisson(2.0, 7, w), [&](int d, int total, double t) {
    EXPECT_EQ(total, 7);
    EXPECT_GE(t, last_t);
    last_t = t;
    done.push_back(d);
  });
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(done, (std::vector<int>{1, 2, 3, 4, 5, 6, 7}));
  for (const auto& r : res->requests) EXPECT_TRUE(r->finished());
}

TEST(SimCluster, RejectsAClusterItCannotRun) {
  ClusterSpec spec = OnePairSpec(Mode::kFull, 0);
  WorkloadOptions w;
  EXPECT_EQ(RunCluster(spec, FixedBatch(1, 0, w)).status().code(), StatusCode::kInvalidArgument);
  spec.options.link.gbps = 1;
  EXPECT_FALSE(RunCluster(spec, {}).ok());
  spec.options.n_decode = 0;
  EXPECT_FALSE(RunCluster(spec, FixedBatch(1, 0, w)).ok());
}

TEST(SimReport, GoodputCountsOnlyRequestsMeetingEveryTarget) {
  ClusterSpec spec = OnePairSpec(Mode::kFull, 1);
  spec.options.link.gbps = GbpsForRatio(spec, kPrompt, 2);
  const SimResult res = RunOne(spec, kPrompt, 4, 3);
  const double ttst1 = Ttst(*res.requests[0]) * 1e3;
  Slo slo;
  slo.ttst_ms = ttst1 * 1.01;  // the first request meets it, the queued ones do not
  const nlohmann::json s = Summarize(res, slo);
  EXPECT_EQ(s["completed"].get<int>(), 3);
  EXPECT_GE(s["goodput"]["requests_meeting_slo"].get<int>(), 1);
  EXPECT_LT(s["goodput"]["requests_meeting_slo"].get<int>(), 3);
  EXPECT_EQ(s["ttst_ms"]["n"].get<int>(), 3);
  EXPECT_GT(s["links"][0]["utilisation"].get<double>(), 0.3);
  EXPECT_LE(s["links"][0]["utilisation"].get<double>(), 1.0);
}

}  // namespace
}  // namespace smartgen::sim
