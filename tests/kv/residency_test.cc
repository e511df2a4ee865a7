#include "kv/residency.h"

#include <thread>

#include <gtest/gtest.h>

namespace smartgen::kv {
namespace {

TEST(Residency, StatesMoveForwardAndCountOnce) {
  Residency r(2, 3, 4);
  EXPECT_EQ(r.total_blocks(), 24);
  EXPECT_TRUE(r.MarkRequested(1, 2, 3));
  EXPECT_FALSE(r.MarkRequested(1, 2, 3)) << "already requested";
  EXPECT_EQ(r.state(1, 2, 3), BlockState::kRequested);
  EXPECT_TRUE(r.MarkPresent(1, 2, 3));
  EXPECT_FALSE(r.MarkPresent(1, 2, 3)) << "a duplicate arrival counts once";
  EXPECT_FALSE(r.MarkRequested(1, 2, 3)) << "present blocks are not requested";
  EXPECT_EQ(r.present_in_layer(1), 1);
  EXPECT_EQ(r.present_total(), 1);
  r.MarkAbsent(1, 2, 3);
  EXPECT_EQ(r.present_total(), 0);
  EXPECT_EQ(r.state(1, 2, 3), BlockState::kAbsent);
  for (int h = 0; h < 3; ++h) {
    for (int b = 0; b < 4; ++b) r.MarkPresent(0, h, b);
  }
  EXPECT_TRUE(r.LayerComplete(0));
  EXPECT_FALSE(r.LayerComplete(1));
  EXPECT_FALSE(r.AllPresent());
  r.MarkAllPresent();
  EXPECT_TRUE(r.AllPresent());
}

TEST(Residency, RestrictedToNeededBlocksCountsAndCompletesOnThoseOnly) {
  // Layer 0 needs every block, layer 1 only blocks 2 and 3 (a sliding window's).
  Residency r(2, 2, 4);
  const std::int64_t first[] = {0, 2};
  r.RestrictToNeeded(first);
  EXPECT_EQ(r.total_blocks(), 16);
  EXPECT_EQ(r.needed_total(), 12);
  EXPECT_EQ(r.needed_in_layer(1), 4);
  EXPECT_FALSE(r.needed(1, 1));
  EXPECT_TRUE(r.needed(1, 2));
  // A block outside the need is kept but never counted.
  EXPECT_TRUE(r.MarkPresent(1, 0, 0));
  EXPECT_EQ(r.present_in_layer(1), 0);
  EXPECT_EQ(r.present_total(), 0);
  r.MarkAbsent(1, 0, 0);
  EXPECT_EQ(r.present_total(), 0);
  for (int h = 0; h < 2; ++h) {
    for (int b = 2; b < 4; ++b) r.MarkPresent(1, h, b);
  }
  EXPECT_TRUE(r.LayerComplete(1)) << "the needed blocks are all there";
  EXPECT_FALSE(r.AllPresent());
  for (int h = 0; h < 2; ++h) {
    for (int b = 0; b < 4; ++b) r.MarkPresent(0, h, b);
  }
  EXPECT_TRUE(r.AllPresent());
  EXPECT_EQ(r.present_total(), 12);
  EXPECT_EQ(r.state(1, 1, 0), BlockState::kAbsent) << "never awaited, never arrived";
}

TEST(Residency, WaitersWakeOnArrivalAndTimeOutOtherwise) {
  Residency r(1, 1, 2);
  const Status timeout = r.WaitUntil([&] { return r.present(0, 0, 1); },
                                     core::Deadline::After(core::Millis(20)));
  EXPECT_EQ(timeout.code(), StatusCode::kDeadlineExceeded);
  std::thread arrive([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    r.MarkPresent(0, 0, 1);
  });
  EXPECT_TRUE(r.WaitUntil([&] { return r.present(0, 0, 1); },
                          core::Deadline::After(core::Seconds(10)))
                  .ok());
  arrive.join();
  r.Cancel();
  EXPECT_EQ(r.WaitUntil([] { return false; }, core::Deadline::After(core::Seconds(10))).code(),
            StatusCode::kCancelled);
}

}  // namespace
}  // namespace smartgen::kv
