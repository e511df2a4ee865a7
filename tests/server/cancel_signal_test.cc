#include "server/cancel_signal.h"

#include <gtest/gtest.h>

namespace smartgen::server {
namespace {

TEST(CancelSignal, RunsEachCallbackOnceOnTheFirstCancel) {
  CancelSignal s;
  int a = 0, b = 0;
  auto sub_a = s.OnCancel([&] { ++a; });
  auto sub_b = s.OnCancel([&] { ++b; });
  EXPECT_FALSE(s.cancelled());
  s.Cancel();
  s.Cancel();
  EXPECT_TRUE(s.cancelled());
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 1);
}

TEST(CancelSignal, SubscribingAfterTheCancelRunsAtOnce) {
  CancelSignal s;
  s.Cancel();
  int n = 0;
  auto sub = s.OnCancel([&] { ++n; });
  EXPECT_EQ(n, 1);
}

TEST(CancelSignal, ADroppedSubscriptionNeverRuns) {
  CancelSignal s;
  int kept = 0, dropped = 0;
  auto keep = s.OnCancel([&] { ++kept; });
  {
    auto drop = s.OnCancel([&] { ++dropped; });
  }
  CancelSignal::Subscription moved = s.OnCancel([&] { ++kept; });
  CancelSignal::Subscription target = std::move(moved);  // the move keeps it registered
  s.Cancel();
  EXPECT_EQ(kept, 2);
  EXPECT_EQ(dropped, 0);
}

}  // namespace
}  // namespace smartgen::server
