// The engine's bookkeeping pieces: send scheduling by priority, transfer records, leases.
#include <gtest/gtest.h>

#include "transfer/lease_table.h"
#include "transfer/send_queue.h"
#include "transfer/transfer_op.h"

namespace smartgen::transfer {
namespace {

TEST(SendQueue, OnDemandPreemptsAtTheNextRunBoundary) {
  SendQueue q;
  q.Put(1, false, Priority::kSpeculative, {{{5, 0, 0, 0, 100}, 0}});
  Chunk c;
  core::Nanos next = 0;
  ASSERT_TRUE(q.Take(0, 8, &c, &next));
  EXPECT_EQ(c.range, (BlockRange{5, 0, 0, 0, 8}));
  q.Put(2, true, Priority::kOnDemand, {{{5, 1, 1, 40, 3}, 0}});
  q.Put(3, false, Priority::kProactive, {{{5, 2, 0, 0, 2}, 0}});
  ASSERT_TRUE(q.Take(0, 8, &c, &next));
  EXPECT_EQ(c.op_id, 2u);
  EXPECT_TRUE(c.pull_reply);
  EXPECT_EQ(c.range, (BlockRange{5, 1, 1, 40, 3}));
  ASSERT_TRUE(q.Take(0, 8, &c, &next));
  EXPECT_EQ(c.op_id, 3u);
  ASSERT_TRUE(q.Take(0, 8, &c, &next));
  EXPECT_EQ(c.op_id, 1u);
  EXPECT_EQ(c.range, (BlockRange{5, 0, 0, 8, 8}));  // resumes where it stopped
  EXPECT_EQ(q.queued_blocks(), 100u - 16);
}

TEST(SendQueue, FifoWithinAClassAndParking) {
  SendQueue q;
  q.Put(1, false, Priority::kOnDemand, {{{1, 0, 0, 0, 2}, 0}});
  q.Put(2, false, Priority::kOnDemand, {{{2, 0, 0, 0, 2}, 0}});
  Chunk c;
  core::Nanos next = 0;
  ASSERT_TRUE(q.Take(0, 1, &c, &next));
  EXPECT_EQ(c.op_id, 1u);
  // The source was not ready: the rest is parked until t=100; job 2 goes meanwhile.
  q.PutFront(c, 100);  // merges with the job's remaining block
  ASSERT_TRUE(q.Take(10, 4, &c, &next));
  EXPECT_EQ(c.op_id, 2u);
  EXPECT_FALSE(q.Take(10, 4, &c, &next));
  EXPECT_EQ(next, 100);
  ASSERT_TRUE(q.Take(100, 4, &c, &next));
  EXPECT_EQ(c.range, (BlockRange{1, 0, 0, 0, 2}));
  EXPECT_TRUE(q.empty());
}

TEST(SendQueue, PutReplacesAndRemoveRequestDrops) {
  SendQueue q;
  q.Put(9, true, Priority::kSpeculative, {{{1, 0, 0, 0, 50}, 0}, {{2, 0, 0, 0, 50}, 0}});
  EXPECT_EQ(q.queued_blocks(), 100u);
  q.Put(9, true, Priority::kSpeculative, {{{1, 0, 0, 10, 5}, 0}, {{2, 0, 0, 0, 50}, 0}});
  EXPECT_EQ(q.queued_blocks(), 55u);
  q.RemoveRequest(2);
  EXPECT_EQ(q.queued_blocks(), 5u);
  q.RemoveRequest(1);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.queued_blocks(), 0u);
}

TEST(TransferOp, NormalizeMergesOverlapsAndNeighbours) {
  const auto r = NormalizeRanges({{1, 0, 0, 5, 2}, {1, 0, 0, 0, 3}, {1, 0, 0, 3, 1},
                                  {1, 0, 1, 0, 1}, {1, 0, 0, 6, 4}, {0, 9, 9, 9, 0}});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], (BlockRange{1, 0, 0, 0, 4}));
  EXPECT_EQ(r[1], (BlockRange{1, 0, 0, 5, 5}));  // block 4 is not asked for
  EXPECT_EQ(r[2], (BlockRange{1, 0, 1, 0, 1}));
}

TEST(TransferOp, TracksDeliveredBlocksIdempotently) {
  TransferOp op(1, PeerId{1}, Direction::kPull, Priority::kOnDemand,
                {{1, 0, 0, 0, 4}, {1, 2, 1, 10, 2}}, {0, 0}, core::Deadline::Never(), 0);
  EXPECT_EQ(op.MarkDone({1, 0, 0, 1, 2}), 2u);
  EXPECT_EQ(op.MarkDone({1, 0, 0, 1, 2}), 0u);  // duplicate
  EXPECT_EQ(op.MarkDone({1, 0, 0, 3, 5}), 1u);  // only what the op covers
  EXPECT_TRUE(op.IsDone({1, 0, 0, 3}));
  EXPECT_FALSE(op.Covers({1, 0, 0, 4}));
  const auto missing = op.Missing();
  ASSERT_EQ(missing.size(), 2u);
  EXPECT_EQ(missing[0].range, (BlockRange{1, 0, 0, 0, 1}));
  EXPECT_EQ(missing[1].range, (BlockRange{1, 2, 1, 10, 2}));
  EXPECT_FALSE(op.complete());
  op.MarkDone({1, 0, 0, 0, 1});
  op.MarkDone({1, 2, 1, 10, 2});
  EXPECT_TRUE(op.complete());
}

TEST(TransferOp, PushRetransmissionTimers) {
  TransferOp op(1, PeerId{1}, Direction::kPush, Priority::kSpeculative, {{1, 0, 0, 0, 8}}, {0},
                core::Deadline::Never(), 0);
  EXPECT_EQ(op.RecordSent({1, 0, 0, 0, 4}, 100), 1);
  EXPECT_EQ(op.RecordSent({1, 0, 0, 4, 4}, 200), 1);
  auto late = op.TimedOut(150, 1000);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].first, (BlockRange{1, 0, 0, 0, 4}));
  EXPECT_EQ(op.RecordSent({1, 0, 0, 0, 4}, 1000), 2);  // the resend counts
  EXPECT_EQ(op.TakeInFlight({1, 0, 0, 0, 4}), 2);
  EXPECT_EQ(op.TakeInFlight({1, 0, 0, 0, 4}), 0);
}

TEST(LeaseTable, ReleaseWaitsForInFlightReads) {
  LeaseTable t(core::Seconds(1), core::Seconds(10));
  ASSERT_TRUE(t.Pin(7, 0));
  EXPECT_FALSE(t.Release(7, ReleaseReason::kCancelled, 0).has_value());  // a read is in flight
  EXPECT_FALSE(t.Pin(7, 0));                                             // no new reads
  auto due = t.Unpin(7);
  ASSERT_TRUE(due.has_value());
  EXPECT_EQ(due->reason, ReleaseReason::kCancelled);
  EXPECT_EQ(t.Released(7), ReleaseReason::kCancelled);
  EXPECT_FALSE(t.Hold(7, 0, 0));
  EXPECT_EQ(t.active(), 0u);
}

TEST(LeaseTable, IdleLeasesExpireAndTombstonesAreForgotten) {
  LeaseTable t(core::Millis(100), core::Seconds(1));
  ASSERT_TRUE(t.Hold(1, 0, 0));
  ASSERT_TRUE(t.Hold(2, core::Millis(500), 0));
  t.Touch(1, core::Millis(50));
  std::vector<std::uint64_t> expired;
  EXPECT_TRUE(t.Expire(core::Millis(120), &expired).empty());
  auto due = t.Expire(core::Millis(150), &expired);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].request_id, 1u);
  EXPECT_EQ(expired, std::vector<std::uint64_t>{1});
  EXPECT_EQ(t.released(ReleaseReason::kExpired), 1u);
  EXPECT_EQ(t.active(), 1u);
  t.Expire(core::Seconds(3), &expired);
  EXPECT_FALSE(t.Released(1).has_value());  // tombstone forgotten
  EXPECT_EQ(t.ReleaseAll(ReleaseReason::kCancelled).size(), 0u);  // 2 expired too
}

}  // namespace
}  // namespace smartgen::transfer
