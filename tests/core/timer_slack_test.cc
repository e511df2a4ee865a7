#include "core/timer_slack.h"

#include <gtest/gtest.h>

#include <thread>

#if defined(__linux__)
#include <sys/prctl.h>
#endif

namespace smartgen::core {
namespace {

TEST(TimerSlack, SetsTheCallingThreadsSlackOnly) {
#if defined(__linux__)
  std::int64_t other_before = -1, other_after = -1, mine = -1;
  std::thread other([&] { other_before = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0); });
  other.join();
  std::thread t([&] {
    ASSERT_TRUE(SetTimerSlack(1000).ok());
    mine = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  });
  t.join();
  std::thread later([&] { other_after = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0); });
  later.join();
  EXPECT_EQ(mine, 1000);
  EXPECT_EQ(other_after, other_before);  // a new thread inherits the creator's, untouched
#else
  GTEST_SKIP() << "no timer slack control on this platform";
#endif
}

TEST(TimerSlack, RefusesNonPositive) {
  EXPECT_EQ(SetTimerSlack(0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SetTimerSlack(-5).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace smartgen::core
