// AdmissionQueue as plain data: slots, the line, its order, and every way out of it.
#include "server/admission_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "core/clock.h"

namespace smartgen::server {
namespace {

using Outcome = AdmissionQueue::Outcome;

// Polls `pred` for up to 5 s (the waits below are for other threads to reach a state).
bool Eventually(const std::function<bool()>& pred) {
  const core::Deadline d = core::Deadline::After(core::Seconds(5));
  while (!pred() && !d.Expired()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return pred();
}

AdmissionOptions Options(int running, int queued, core::Nanos max_wait = core::Seconds(10)) {
  AdmissionOptions o;
  o.max_running = running;
  o.max_queued = queued;
  o.max_wait = max_wait;
  o.abandon_poll = core::Millis(5);
  return o;
}

TEST(AdmissionQueue, AdmitsUpToMaxRunningQueuesThenRefuses) {
  AdmissionQueue q(Options(2, 1));
  auto a = std::make_unique<AdmissionQueue::Ticket>(q.Acquire(core::Deadline::Never()));
  AdmissionQueue::Ticket b = q.Acquire(core::Deadline::Never());
  EXPECT_TRUE(a->admitted());
  EXPECT_TRUE(b.admitted());
  EXPECT_EQ(a->waited(), 0);
  EXPECT_EQ(q.running(), 2);
  auto third = std::async(std::launch::async, [&] {
    AdmissionQueue::Ticket t = q.Acquire(core::Deadline::Never());
    return t.outcome();
  });
  ASSERT_TRUE(Eventually([&] { return q.queued() == 1; }));
  // The line is full: the fourth is refused at once, without waiting.
  AdmissionQueue::Ticket fourth = q.Acquire(core::Deadline::Never());
  EXPECT_EQ(fourth.outcome(), Outcome::kQueueFull);
  EXPECT_EQ(q.running(), 2);
  a.reset();  // frees a slot: the third gets it
  EXPECT_EQ(third.get(), Outcome::kAdmitted);
  EXPECT_EQ(q.queued(), 0);
  EXPECT_EQ(q.running(), 1);  // the third released its slot when its ticket went
}

TEST(AdmissionQueue, ServesTheLineInArrivalOrder) {
  AdmissionQueue q(Options(1, 8));
  auto holder = std::make_unique<AdmissionQueue::Ticket>(q.Acquire(core::Deadline::Never()));
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::thread> waiters;
  for (int i = 0; i < 4; ++i) {
    waiters.emplace_back([&, i] {
      AdmissionQueue::Ticket t = q.Acquire(core::Deadline::Never());
      ASSERT_TRUE(t.admitted());
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
    });
    ASSERT_TRUE(Eventually([&] { return q.queued() == i + 1; }));  // i is in line before i+1
  }
  holder.reset();
  for (auto& t : waiters) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

TEST(AdmissionQueue, WaitEndsAtMaxWaitOrTheRequestDeadline) {
  AdmissionQueue q(Options(1, 4, core::Millis(30)));
  AdmissionQueue::Ticket holder = q.Acquire(core::Deadline::Never());
  AdmissionQueue::Ticket late = q.Acquire(core::Deadline::Never());
  EXPECT_EQ(late.outcome(), Outcome::kTimedOut);
  EXPECT_GE(late.waited(), core::Millis(30));
  AdmissionQueue q2(Options(1, 4, core::Seconds(60)));
  AdmissionQueue::Ticket holder2 = q2.Acquire(core::Deadline::Never());
  AdmissionQueue::Ticket bounded = q2.Acquire(core::Deadline::After(core::Millis(20)));
  EXPECT_EQ(bounded.outcome(), Outcome::kTimedOut);
  EXPECT_EQ(q.queued() + q2.queued(), 0);
  EXPECT_EQ(q.running(), 1);  // a refused ticket holds nothing
}

TEST(AdmissionQueue, AbandonedWaiterLeavesTheLineAndTheNextMovesUp) {
  AdmissionQueue q(Options(1, 4));
  auto holder = std::make_unique<AdmissionQueue::Ticket>(q.Acquire(core::Deadline::Never()));
  std::atomic<bool> gone{false};
  auto first = std::async(std::launch::async, [&] {
    return q.Acquire(core::Deadline::Never(), [&] { return gone.load(); }).outcome();
  });
  ASSERT_TRUE(Eventually([&] { return q.queued() == 1; }));
  auto second =
      std::async(std::launch::async, [&] { return q.Acquire(core::Deadline::Never()).outcome(); });
  ASSERT_TRUE(Eventually([&] { return q.queued() == 2; }));
  gone = true;
  EXPECT_EQ(first.get(), Outcome::kAbandoned);
  EXPECT_TRUE(Eventually([&] { return q.queued() == 1; }));
  holder.reset();
  EXPECT_EQ(second.get(), Outcome::kAdmitted);
}

TEST(AdmissionQueue, CloseRefusesWaitersAndLaterRequests) {
  AdmissionQueue q(Options(1, 4));
  AdmissionQueue::Ticket holder = q.Acquire(core::Deadline::Never());
  auto waiter =
      std::async(std::launch::async, [&] { return q.Acquire(core::Deadline::Never()).outcome(); });
  ASSERT_TRUE(Eventually([&] { return q.queued() == 1; }));
  q.Close();
  EXPECT_EQ(waiter.get(), Outcome::kClosed);
  EXPECT_EQ(q.Acquire(core::Deadline::Never()).outcome(), Outcome::kClosed);
}

TEST(AdmissionQueue, ZeroQueueRefusesAtOnceWhenAllSlotsRun) {
  AdmissionQueue q(Options(1, 0));
  AdmissionQueue::Ticket holder = q.Acquire(core::Deadline::Never());
  EXPECT_EQ(q.Acquire(core::Deadline::Never()).outcome(), Outcome::kQueueFull);
}

}  // namespace
}  // namespace smartgen::server
