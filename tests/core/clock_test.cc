#include "core/clock.h"

#include <gtest/gtest.h>

namespace smartgen::core {
namespace {

TEST(Deadline, ExpiresOnManualClock) {
  ManualClock clock(1000);
  const Deadline d = Deadline::After(Millis(5), clock);
  EXPECT_FALSE(d.Expired(clock));
  EXPECT_EQ(d.Remaining(clock), Millis(5));
  clock.Advance(Millis(5));
  EXPECT_TRUE(d.Expired(clock));
  EXPECT_EQ(d.Remaining(clock), 0);
  EXPECT_FALSE(Deadline::Never().Expired(clock));
  EXPECT_EQ(Earlier(d, Deadline::Never()).when(), d.when());
}

}  // namespace
}  // namespace smartgen::core
