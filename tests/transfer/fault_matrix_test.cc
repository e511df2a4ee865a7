// The fault matrix (issue 4.4), in process: each fault is injected by the fault transport,
// deterministically, and each case must end in a defined terminal state within its deadline,
// with every accepted byte correct.
#include <gtest/gtest.h>

#include <thread>

#include "transfer/fault/fault_transport.h"
#include "transfer/handshake.h"
#include "transfer/loopback/loopback_transport.h"
#include "transfer_test_util.h"

namespace smartgen::transfer::testing {
namespace {

constexpr std::uint64_t kFaultRequest = 3;
constexpr std::uint32_t kBlocks = 64;                      // per (layer, head): 2 MiB in all
constexpr std::uint64_t kTotal = 4ull * 2 * kBlocks;       // blocks
const Deadline kSoon() { return Deadline::After(core::Seconds(20)); }

EndpointConfig Fast(std::string name) {
  EndpointConfig c = TestConfig(std::move(name));
  c.retransmit_timeout = core::Millis(150);
  c.max_frame_bytes = 64 * 4096;  // 8 frames per row... 1 row = 1 frame of 64 blocks
  return c;
}

struct Faulty {
  std::shared_ptr<LoopbackTransport> inner = std::make_shared<LoopbackTransport>(1 << 20);
  std::shared_ptr<FaultTransport> prefill_side;  // faults on what prefill sends
  std::shared_ptr<FaultTransport> decode_side;   // faults on what decode sends
  EndpointPair pair;
};

Faulty Make(FaultPlan prefill_plan, FaultPlan decode_plan = {},
            EndpointConfig prefill = Fast("prefill"), EndpointConfig decode = Fast("decode")) {
  Faulty f;
  f.prefill_side = std::make_shared<FaultTransport>(f.inner, std::move(prefill_plan));
  f.decode_side = std::make_shared<FaultTransport>(f.inner, std::move(decode_plan));
  auto pair = MakePair(f.prefill_side, f.decode_side, std::move(prefill), std::move(decode),
                       kFaultRequest, kBlocks);
  EXPECT_TRUE(pair.ok()) << pair.status().ToString();
  if (pair.ok()) f.pair = std::move(*pair);
  return f;
}

FaultPlan DataPlan() {
  FaultPlan plan;
  plan.only_types = {FrameType::kData};
  return plan;
}

Status Pull(EndpointPair& p, Priority priority = Priority::kProactive) {
  auto h = p.decode->Post(p.prefill_peer,
                          {Direction::kPull, priority, AllRanges(TestGeometry(), kFaultRequest, kBlocks)});
  if (!h.ok()) return h.status();
  return p.decode->Wait(*h, kSoon());
}

Status Push(EndpointPair& p) {
  auto h = p.prefill->Post(p.decode_peer, {Direction::kPush, Priority::kSpeculative,
                                           AllRanges(TestGeometry(), kFaultRequest, kBlocks)});
  if (!h.ok()) return h.status();
  return p.prefill->Wait(*h, kSoon());
}

void ExpectComplete(EndpointPair& p) {
  EXPECT_EQ(p.decode_store->PresentBlocks(kFaultRequest), kTotal);
  EXPECT_TRUE(p.decode_store->VerifyRequest(kFaultRequest).ok());
}

TEST(TransferFaults, CorruptPayloadIsRejectedAndPulledAgain) {
  FaultPlan plan = DataPlan();
  plan.corrupt_frames = {1, 3};
  Faulty f = Make(plan);
  ASSERT_TRUE(f.pair.decode);
  ASSERT_TRUE(Pull(f.pair).ok());
  ExpectComplete(f.pair);
  const Metrics m = f.pair.decode->GetMetrics();
  EXPECT_EQ(m.rejected_corrupt, 2 * kBlocks);
  EXPECT_GE(m.retries, 2u);
  EXPECT_EQ(f.pair.decode_store->rejected_count(), 2 * kBlocks);  // the sink was told
  EXPECT_EQ(f.prefill_side->stats().corrupted.load(), 2u);
}

TEST(TransferFaults, CorruptPayloadIsNackedAndPushedAgain) {
  FaultPlan plan = DataPlan();
  plan.corrupt_frames = {0, 5};
  Faulty f = Make(plan);
  ASSERT_TRUE(f.pair.prefill);
  ASSERT_TRUE(Push(f.pair).ok());
  ExpectComplete(f.pair);
  EXPECT_EQ(f.pair.decode->GetMetrics().rejected_corrupt, 2 * kBlocks);
  EXPECT_GE(f.pair.prefill->GetMetrics().retries, 2u);
}

TEST(TransferFaults, CorruptHeaderClosesTheConnection) {
  FaultPlan plan = DataPlan();
  plan.corrupt_frames = {2};
  plan.corrupt_target = CorruptTarget::kHeader;
  Faulty f = Make(plan);
  ASSERT_TRUE(f.pair.decode);
  core::Stopwatch watch;
  const Status st = Pull(f.pair);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("header"), std::string_view::npos) << st.ToString();
  EXPECT_LT(watch.ElapsedSeconds(), 5.0);
  EXPECT_FALSE(f.pair.decode->IsConnected(f.pair.prefill_peer));
  EXPECT_TRUE(f.pair.decode_store->VerifyRequest(kFaultRequest).ok());  // nothing bad was accepted
}

TEST(TransferFaults, DuplicateBlocksAreDroppedIdempotently) {
  FaultPlan plan = DataPlan();
  plan.duplicate_frames = {0, 2, 4};
  Faulty f = Make(plan);
  ASSERT_TRUE(f.pair.prefill);
  ASSERT_TRUE(Push(f.pair).ok());
  ExpectComplete(f.pair);
  // Wait for the duplicates (sent after the originals) to be counted.
  const Deadline d = Deadline::After(core::Seconds(5));
  while (!d.Expired() && f.pair.decode->GetMetrics().duplicates < 3 * kBlocks) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(f.pair.decode->GetMetrics().duplicates, 3 * kBlocks);
  EXPECT_EQ(f.pair.decode_store->ready_count(), kTotal);  // never written twice

  // A pulled run that arrives twice is dropped by the transfer itself.
  FaultPlan again = DataPlan();
  again.duplicate_frames = {1};
  Faulty g = Make(again);
  ASSERT_TRUE(g.pair.decode);
  ASSERT_TRUE(Pull(g.pair).ok());
  ExpectComplete(g.pair);
  const Deadline d2 = Deadline::After(core::Seconds(5));
  while (!d2.Expired() && g.pair.decode->GetMetrics().rejected_stale +
                                  g.pair.decode->GetMetrics().duplicates < kBlocks) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const Metrics m = g.pair.decode->GetMetrics();
  EXPECT_EQ(m.duplicates + m.rejected_stale, kBlocks);
  EXPECT_EQ(g.pair.decode_store->ready_count(), kTotal);
}

TEST(TransferFaults, DroppedFramesAreSentAgain) {
  FaultPlan plan = DataPlan();
  plan.drop_frames = {1, 6};
  Faulty pulled = Make(plan);
  ASSERT_TRUE(pulled.pair.decode);
  ASSERT_TRUE(Pull(pulled.pair).ok());
  ExpectComplete(pulled.pair);
  EXPECT_GE(pulled.pair.decode->GetMetrics().retries, 1u);

  FaultPlan acks;
  acks.only_types = {FrameType::kAck};
  acks.drop_frames = {0, 1};
  Faulty pushed = Make(plan, acks);
  ASSERT_TRUE(pushed.pair.prefill);
  ASSERT_TRUE(Push(pushed.pair).ok());
  ExpectComplete(pushed.pair);
  EXPECT_GE(pushed.pair.prefill->GetMetrics().retries, 2u);
}

TEST(TransferFaults, ReorderedFramesComplete) {
  FaultPlan plan = DataPlan();
  plan.reorder_frames = {0, 3, 5};
  Faulty f = Make(plan);
  ASSERT_TRUE(f.pair.decode);
  ASSERT_TRUE(Pull(f.pair).ok());
  ExpectComplete(f.pair);
  EXPECT_EQ(f.prefill_side->stats().reordered.load(), 3u);
}

TEST(TransferFaults, LateBlocksAfterCancelAreDropped) {
  FaultPlan plan = DataPlan();
  plan.delay_probability = 1.0;
  plan.delay = core::Millis(25);  // every data frame lingers on the "link"
  Faulty f = Make(plan);
  ASSERT_TRUE(f.pair.decode);
  auto h = f.pair.decode->Post(f.pair.prefill_peer, {Direction::kPull, Priority::kSpeculative,
                                                     AllRanges(TestGeometry(), kFaultRequest, kBlocks)});
  ASSERT_TRUE(h.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  ASSERT_TRUE(f.pair.decode->Cancel(*h).ok());
  EXPECT_EQ(f.pair.decode->Wait(*h, kSoon()).code(), StatusCode::kCancelled);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  const std::uint64_t present = f.pair.decode_store->PresentBlocks(kFaultRequest);
  const Deadline d = Deadline::After(core::Seconds(5));
  while (!d.Expired() && f.pair.decode->GetMetrics().rejected_stale == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_GT(f.pair.decode->GetMetrics().rejected_stale, 0u);  // late blocks were counted...
  EXPECT_EQ(f.pair.decode_store->PresentBlocks(kFaultRequest), present);  // ...and not written
  EXPECT_LT(present, kTotal);
  EXPECT_TRUE(f.pair.decode_store->VerifyRequest(kFaultRequest).ok());
}

TEST(TransferFaults, PushedBlocksOfACancelledRequestAreStale) {
  FaultPlan plan = DataPlan();
  plan.delay_probability = 1.0;
  plan.delay = core::Millis(25);
  Faulty f = Make(plan);
  ASSERT_TRUE(f.pair.prefill);
  auto h = f.pair.prefill->Post(f.pair.decode_peer, {Direction::kPush, Priority::kSpeculative,
                                                     AllRanges(TestGeometry(), kFaultRequest, kBlocks)});
  ASSERT_TRUE(h.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  f.pair.decode->CancelRequest(kFaultRequest);  // the decode node finished or gave up
  EXPECT_EQ(f.pair.prefill->Wait(*h, kSoon()).code(), StatusCode::kCancelled);
  const Deadline d = Deadline::After(core::Seconds(5));
  while (!d.Expired() && f.pair.decode->GetMetrics().rejected_stale == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_GT(f.pair.decode->GetMetrics().rejected_stale, 0u);
  EXPECT_LT(f.pair.decode_store->PresentBlocks(kFaultRequest), kTotal);
  // The sender's lease was released as cancelled.
  const Deadline r = Deadline::After(core::Seconds(5));
  while (!r.Expired() && f.pair.prefill_store->releases().empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(f.pair.prefill_store->releases().size(), 1u);
  EXPECT_EQ(f.pair.prefill_store->releases()[0].second, ReleaseReason::kCancelled);
}

TEST(TransferFaults, LeaseExpiresWhenNobodyAsks) {
  EndpointConfig prefill = Fast("prefill");
  prefill.lease_ttl = core::Millis(150);
  Faulty f = Make({}, {}, prefill);
  ASSERT_TRUE(f.pair.decode);
  auto h = f.pair.decode->Post(f.pair.prefill_peer, {Direction::kPull, Priority::kOnDemand,
                                                     {{kFaultRequest, 0, 0, 0, 4}}});
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(f.pair.decode->Wait(*h, kSoon()).ok());
  // The decode node goes quiet; the prefill node frees the KV by itself.
  const Deadline d = Deadline::After(core::Seconds(5));
  while (!d.Expired() && f.pair.prefill_store->releases().empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(f.pair.prefill_store->releases().size(), 1u);
  EXPECT_EQ(f.pair.prefill_store->releases()[0],
            std::make_pair(kFaultRequest, ReleaseReason::kExpired));
  EXPECT_EQ(f.pair.prefill->GetMetrics().leases_expired, 1u);
  EXPECT_EQ(f.pair.prefill->GetMetrics().leases_active, 0u);
  // A late pull is refused at once (not left to time out).
  auto late = f.pair.decode->Post(f.pair.prefill_peer, {Direction::kPull, Priority::kOnDemand,
                                                        {{kFaultRequest, 1, 0, 0, 4}}});
  ASSERT_TRUE(late.ok());
  const Status st = f.pair.decode->Wait(*late, kSoon());
  EXPECT_EQ(st.code(), StatusCode::kNotFound) << st.ToString();
  EXPECT_NE(st.message().find("expired"), std::string_view::npos);
}

TEST(TransferFaults, SilentPeerIsDeclaredDeadByHeartbeat) {
  auto transport = std::make_shared<LoopbackTransport>();
  auto listener = transport->Listen("zombie");
  ASSERT_TRUE(listener.ok());
  // A peer that completes the handshake and then never sends another byte.
  std::unique_ptr<Connection> zombie;
  std::thread t([&] {
    auto c = (*listener)->Accept(Deadline::After(core::Seconds(5)));
    if (!c.ok()) return;
    if (RunHandshake(**c, HandshakeRole::kAcceptor, TestHandshake(), "test-token",
                     Deadline::After(core::Seconds(5)))
            .ok()) {
      zombie = std::move(*c);
    }
  });
  MemoryBlockStore store(TestGeometry());
  ASSERT_TRUE(store.AddRequest(kFaultRequest, 4, false).ok());
  EndpointConfig config = Fast("decode");
  config.heartbeat_interval = core::Millis(50);
  config.heartbeat_timeout = core::Millis(400);
  auto decode = Endpoint::Create(config, transport, nullptr, &store);
  ASSERT_TRUE(decode.ok());
  auto peer = (*decode)->Connect("zombie", Deadline::After(core::Seconds(5)));
  t.join();
  ASSERT_TRUE(peer.ok()) << peer.status().ToString();
  auto h = (*decode)->Post(*peer, {Direction::kPull, Priority::kOnDemand, {{kFaultRequest, 0, 0, 0, 4}}});
  ASSERT_TRUE(h.ok());
  core::Stopwatch watch;
  const Status st = (*decode)->Wait(*h, kSoon());
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("heartbeat"), std::string_view::npos) << st.ToString();
  EXPECT_LT(watch.ElapsedSeconds(), 3.0);
}

TEST(TransferFaults, ConnectionResetMidTransferFailsRetryably) {
  FaultPlan plan;
  plan.disconnect_after_bytes = 512 * 1024;
  Faulty f = Make(plan);
  ASSERT_TRUE(f.pair.decode);
  core::Stopwatch watch;
  const Status st = Pull(f.pair);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_LT(watch.ElapsedSeconds(), 5.0);
  EXPECT_EQ(f.prefill_side->stats().disconnects.load(), 1u);
  EXPECT_TRUE(f.pair.decode_store->VerifyRequest(kFaultRequest).ok());
  const Deadline d = Deadline::After(core::Seconds(5));
  while (!d.Expired() && f.pair.prefill->IsConnected(f.pair.decode_peer)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_FALSE(f.pair.prefill->IsConnected(f.pair.decode_peer));
}

TEST(TransferFaults, RandomFaultsInBothDirectionsStillDeliverExactly) {
  FaultPlan plan;
  plan.seed = 20260707;
  plan.only_types = {FrameType::kData, FrameType::kAck, FrameType::kPull};
  plan.drop_probability = 0.03;
  plan.corrupt_probability = 0.03;
  plan.duplicate_probability = 0.03;
  plan.reorder_probability = 0.03;
  FaultPlan back = plan;
  back.seed = 7;
  EndpointConfig prefill = Fast("prefill"), decode = Fast("decode");
  prefill.max_frame_bytes = decode.max_frame_bytes = 8 * 4096;  // many small frames
  prefill.max_attempts = decode.max_attempts = 20;
  Faulty f = Make(plan, back, prefill, decode);
  ASSERT_TRUE(f.pair.decode);
  ASSERT_TRUE(f.pair.prefill_store->AddRequest(kFaultRequest + 1, kBlocks, true).ok());
  ASSERT_TRUE(f.pair.decode_store->AddRequest(kFaultRequest + 1, kBlocks, false).ok());
  auto pull = f.pair.decode->Post(f.pair.prefill_peer,
                                  {Direction::kPull, Priority::kOnDemand,
                                   AllRanges(TestGeometry(), kFaultRequest, kBlocks)});
  auto push = f.pair.prefill->Post(f.pair.decode_peer,
                                   {Direction::kPush, Priority::kSpeculative,
                                    AllRanges(TestGeometry(), kFaultRequest + 1, kBlocks)});
  ASSERT_TRUE(pull.ok() && push.ok());
  EXPECT_TRUE(f.pair.decode->Wait(*pull, kSoon()).ok());
  EXPECT_TRUE(f.pair.prefill->Wait(*push, kSoon()).ok());
  ExpectComplete(f.pair);
  EXPECT_EQ(f.pair.decode_store->PresentBlocks(kFaultRequest + 1), kTotal);
  EXPECT_TRUE(f.pair.decode_store->VerifyRequest(kFaultRequest + 1).ok());
  const FaultStats& s = f.prefill_side->stats();
  EXPECT_GT(s.dropped + s.corrupted + s.duplicated + s.reordered, 0u);
}

}  // namespace
}  // namespace smartgen::transfer::testing
