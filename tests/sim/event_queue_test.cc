#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace smartgen::sim {
namespace {

TEST(EventQueue, RunsInTimeOrderAndFifoOnTies) {
  EventQueue q;
  std::vector<int> order;
  q.At(2.0, [&] { order.push_back(3); });
  q.At(1.0, [&] { order.push_back(1); });
  q.At(1.0, [&] { order.push_back(2); });
  q.At(0.5, [&] { order.push_back(0); });
  q.RunAll();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_DOUBLE_EQ(q.now(), 2.0);
  EXPECT_EQ(q.processed(), 4u);
}

TEST(EventQueue, EventsScheduleEventsAndThePastRunsNow) {
  EventQueue q;
  std::vector<double> times;
  q.At(1.0, [&] {
    times.push_back(q.now());
    q.After(0.25, [&] { times.push_back(q.now()); });
    q.At(0.1, [&] { times.push_back(q.now()); });  // in the past: runs at 1.0, after this one
  });
  q.RunAll();
  ASSERT_EQ(times.size(), 3u);
  EXPECT_DOUBLE_EQ(times[0], 1.0);
  EXPECT_DOUBLE_EQ(times[1], 1.0);
  EXPECT_DOUBLE_EQ(times[2], 1.25);
}

TEST(EventQueue, RunUntilStopsAtTheHorizon) {
  EventQueue q;
  int ran = 0;
  q.At(1.0, [&] { ++ran; });
  q.At(3.0, [&] { ++ran; });
  q.RunUntil(2.0);
  EXPECT_EQ(ran, 1);
  EXPECT_DOUBLE_EQ(q.now(), 2.0);
  EXPECT_EQ(q.pending(), 1u);
  q.RunAll();
  EXPECT_EQ(ran, 2);
  EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace smartgen::sim
