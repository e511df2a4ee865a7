// SmartgenOptions: the request's `smartgen.options` object, read the same way by both nodes
// and the simulator.
#include "select/smartgen_options.h"

#include <gtest/gtest.h>

namespace smartgen::select {
namespace {

TEST(SmartgenOptions, NullAndEmptyGiveTheDefaults) {
  for (const char* text : {"null", "{}"}) {
    auto o = ParseSmartgenOptions(nlohmann::json::parse(text));
    ASSERT_TRUE(o.ok()) << text;
    EXPECT_FLOAT_EQ(o->on_demand.budget_fraction, 0.125f);
    EXPECT_TRUE(o->first_step);
    EXPECT_DOUBLE_EQ(o->first_wait_ms, 8);
    EXPECT_DOUBLE_EQ(o->wait_bound_ms, -1);
    EXPECT_DOUBLE_EQ(o->wait_share, 0.15);
    EXPECT_TRUE(o->attend_present);
  }
}

TEST(SmartgenOptions, ReadsEveryKeyAndRoundTrips) {
  auto o = ParseSmartgenOptions(nlohmann::json::parse(
      R"({"budget_fraction": 0.25, "sink_blocks": 2, "local_blocks": 3, "speculative": false,
          "first_step": false, "first_wait_ms": 30, "wait_bound_ms": 2, "wait_share": 0.35,
          "step_slack_ms": 1, "max_fetch_blocks": 7, "speculative_fraction": 0.2,
          "attend_present": false, "proactive_fill": 0.5})"));
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_FLOAT_EQ(o->on_demand.budget_fraction, 0.25f);
  EXPECT_FALSE(o->speculative);
  EXPECT_FALSE(o->first_step);
  EXPECT_FALSE(o->attend_present);
  EXPECT_DOUBLE_EQ(o->first_wait_ms, 30);
  EXPECT_DOUBLE_EQ(o->wait_bound_ms, 2);
  EXPECT_DOUBLE_EQ(o->wait_share, 0.35);
  EXPECT_EQ(o->max_fetch_blocks, 7);
  EXPECT_DOUBLE_EQ(o->pacing.fraction_per_step, 0.2);
  // One sink / last-block count for the proactive and on-demand paths.
  EXPECT_EQ(o->proactive.sink_blocks, 2);
  EXPECT_EQ(o->proactive.last_blocks, 3);
  auto back = ParseSmartgenOptions(ToJson(*o));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(ToJson(*back), ToJson(*o));
}

TEST(SmartgenOptions, RejectsWrongTypesAndRangesNamingTheField) {
  for (const char* bad : {R"({"speculative": 1})", R"({"budget_fraction": 2})",
                          R"({"first_wait_ms": -1})", R"({"wait_bound_ms": "auto"})", R"([1])",
                          R"({"query_window": 0})"}) {
    auto o = ParseSmartgenOptions(nlohmann::json::parse(bad));
    ASSERT_FALSE(o.ok()) << bad;
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  auto o = ParseSmartgenOptions(nlohmann::json::parse(R"({"wait_share": true})"));
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().ToString().find("wait_share"), std::string::npos);
}

// A misspelt key is refused by name (it would otherwise run the default silently); the keys
// another parser of the same object reads pass.
TEST(SmartgenOptions, RejectsUnknownKeysButNotTheOnesOtherParsersRead) {
  auto o = ParseSmartgenOptions(nlohmann::json::parse(R"({"fetch_on_demand": false})"));
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(o.status().ToString().find("fetch_on_demand"), std::string::npos);
  EXPECT_TRUE(
      ParseSmartgenOptions(nlohmann::json::parse(R"({"window_aware": false, "on_demand": false})"))
          .ok());
  static constexpr std::string_view kMine[] = {"mine"};
  EXPECT_TRUE(ParseSmartgenOptions(nlohmann::json::parse(R"({"mine": 1})"), kMine).ok());
  EXPECT_FALSE(
      ParseSmartgenOptions(nlohmann::json::parse(R"({"window_aware": false})"), kMine).ok());
}

}  // namespace
}  // namespace smartgen::select
