#include "sim/sim_options.h"

#include <gtest/gtest.h>

#include "sim_test_util.h"

namespace smartgen::sim {
namespace {

TEST(SimOptions, AreTheNodesOptionsPlusTheSimulatorsOwn) {
  auto d = ParseSmartgenSimOptions(nullptr);
  ASSERT_TRUE(d.ok());
  // The node's defaults, from the node's struct.
  const select::SmartgenOptions node;
  EXPECT_EQ(select::ToJson(*d), select::ToJson(node));
  EXPECT_FALSE(d->proactive_rate_share);
  auto o = ParseSmartgenSimOptions(nlohmann::json::parse(
      R"({"budget_fraction": 0.25, "speculative": false, "wait": "landed", "first_wait_ms": 5,
          "proactive_rate": "share", "sink_blocks": 2, "attend_present": false})"));
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_FLOAT_EQ(o->on_demand.budget_fraction, 0.25f);
  EXPECT_FALSE(o->speculative);
  EXPECT_FALSE(o->attend_present);
  EXPECT_DOUBLE_EQ(o->first_wait_ms, 5);
  EXPECT_DOUBLE_EQ(o->wait_bound_ms, kWaitUntilLandedMs);
  EXPECT_TRUE(o->proactive_rate_share);
  EXPECT_EQ(o->proactive.sink_blocks, 2);  // one sink count for both paths
  // The same keys through the node's parser give the same node options.
  auto n = select::ParseSmartgenOptions(nlohmann::json::parse(
      R"({"budget_fraction": 0.25, "speculative": false, "wait_bound_ms": 1e7, "first_wait_ms": 5,
          "sink_blocks": 2, "attend_present": false})"));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(select::ToJson(*n), select::ToJson(*o));
  // Round trip.
  auto back = ParseSmartgenSimOptions(ToJson(*o));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(ToJson(*back), ToJson(*o));
  EXPECT_EQ(ParseSmartgenSimOptions(nlohmann::json::parse(R"({"wait": "bounded"})"))->wait_bound_ms, -1);
}

TEST(SimOptions, RejectsWrongTypesAndRanges) {
  for (const char* bad : {R"({"speculative": 1})", R"({"budget_fraction": 2})",
                          R"({"wait": "forever"})", R"({"proactive_rate": 3})", R"([1])"}) {
    auto o = ParseSmartgenSimOptions(nlohmann::json::parse(bad));
    EXPECT_FALSE(o.ok()) << bad;
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(ParseMode("fast").ok());
  EXPECT_EQ(*ParseMode("auto"), Mode::kAuto);
  EXPECT_EQ(*ParseTopology("uplink"), Topology::kUplink);
}

TEST(SimOptions, ProactiveRateShareSizesForTheLinkShare) {
  // Two prefill nodes start one after the other at t = 0 on one shared link: with the share
  // rule the second sees two prefills on the link and plans for half the rate (the first saw
  // only itself: the rule looks at the link when a prefill starts).
  ClusterSpec spec = testing::OnePairSpec(Mode::kSmartgen, 1);
  spec.options.n_prefill = spec.options.n_decode = 2;
  spec.options.topology = Topology::kShared;
  spec.options.link.gbps = testing::GbpsForRatio(spec, 2048, 4);
  spec.options.smartgen.first_step = false;  // decoding waits for the whole proactive set
  const SimResult configured = testing::RunOne(spec, 2048, 8, 2);
  spec.options.smartgen.proactive_rate_share = true;
  const SimResult share = testing::RunOne(spec, 2048, 8, 2);
  const auto proactive = [](const SimResult& r, int i) {
    return r.requests[i]->bytes[static_cast<int>(Path::kProactive)] +
           r.requests[i]->bytes[static_cast<int>(Path::kSummary)];
  };
  EXPECT_NEAR(proactive(share, 0) / proactive(configured, 0), 1.0, 1e-9);
  EXPECT_NEAR(proactive(share, 1) / proactive(configured, 1), 0.5, 0.05);
}

}  // namespace
}  // namespace smartgen::sim
