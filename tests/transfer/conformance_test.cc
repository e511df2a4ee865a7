// Every transport against the same behaviour, through the Endpoint API. Built twice: as a
// `unit` test over in-process transports (loopback, fault pass-through) and as a `net` test
// over sockets (tcp, ucx over tcp, ucx over shared memory).
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "transfer/fault/fault_transport.h"
#include "transfer/int8_wire.h"
#include "transfer/loopback/loopback_transport.h"
#include "transfer/tcp/tcp_transport.h"
#include "transfer/ucx/ucx_transport.h"
#include "transfer_test_util.h"

namespace smartgen::transfer::testing {
namespace {

struct TransportCase {
  std::string name;
  // (prefill transport, decode transport)
  std::function<std::pair<std::shared_ptr<Transport>, std::shared_ptr<Transport>>()> make;
};
void PrintTo(const TransportCase& c, std::ostream* os) { *os << c.name; }

std::vector<TransportCase> Cases() {
#ifdef SMARTGEN_CONFORMANCE_NET
  auto ucx = [](std::string tls) {
    return [tls] {
      auto t = UcxTransport::Create(UcxOptions{tls});
      if (!t.ok()) return std::pair<std::shared_ptr<Transport>, std::shared_ptr<Transport>>();
      std::shared_ptr<Transport> shared = *t;
      return std::make_pair(shared, shared);
    };
  };
  return {
      {"tcp",
       [] {
         auto t = std::make_shared<TcpTransport>();
         return std::make_pair<std::shared_ptr<Transport>, std::shared_ptr<Transport>>(t, t);
       }},
      {"ucx_tcp", ucx("tcp")},
      {"ucx_shm", ucx("posix,cma,self")},
  };
#else
  return {
      {"loopback",
       [] {
         auto t = std::make_shared<LoopbackTransport>(1 << 20);
         return std::make_pair<std::shared_ptr<Transport>, std::shared_ptr<Transport>>(t, t);
       }},
      {"fault_passthrough",
       [] {
         auto inner = std::make_shared<LoopbackTransport>(1 << 20);
         auto faulty = std::make_shared<FaultTransport>(inner, FaultPlan{});
         return std::make_pair<std::shared_ptr<Transport>, std::shared_ptr<Transport>>(faulty,
                                                                                       inner);
       }},
  };
#endif
}

constexpr std::uint64_t kRequest = 7;

class TransferConformance : public ::testing::TestWithParam<TransportCase> {
 protected:
  void SetUp() override {
    std::tie(prefill_transport_, decode_transport_) = GetParam().make();
    ASSERT_TRUE(prefill_transport_ && decode_transport_) << "transport unavailable";
  }

  EndpointPair Pair(std::uint32_t n_blocks, EndpointConfig prefill = TestConfig("prefill"),
                    EndpointConfig decode = TestConfig("decode"), EndpointCallbacks pcb = {},
                    EndpointCallbacks dcb = {}) {
    auto pair = MakePair(prefill_transport_, decode_transport_, std::move(prefill),
                         std::move(decode), kRequest, n_blocks, std::move(pcb), std::move(dcb));
    EXPECT_TRUE(pair.ok()) << pair.status().ToString();
    return pair.ok() ? std::move(*pair) : EndpointPair{};
  }

  std::shared_ptr<Transport> prefill_transport_;
  std::shared_ptr<Transport> decode_transport_;
};

TEST_P(TransferConformance, PullDeliversEveryByte) {
  EndpointPair p = Pair(64);
  ASSERT_TRUE(p.decode);
  const auto ranges = AllRanges(TestGeometry(), kRequest, 64);
  auto h = p.decode->Post(p.prefill_peer, {Direction::kPull, Priority::kProactive, ranges});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_TRUE(p.decode->Wait(*h, Deadline::After(core::Seconds(20))).ok());
  auto progress = p.decode->Poll(*h);
  ASSERT_TRUE(progress.ok());
  EXPECT_EQ(progress->state, TransferState::kDone);
  EXPECT_EQ(progress->blocks_done, 4u * 2 * 64);
  EXPECT_EQ(p.decode_store->PresentBlocks(kRequest), 4u * 2 * 64);
  EXPECT_TRUE(p.decode_store->VerifyRequest(kRequest).ok());
  const Metrics m = p.decode->GetMetrics();
  const auto proactive = static_cast<int>(Priority::kProactive);
  EXPECT_EQ(m.by_priority[proactive].blocks_received, 4u * 2 * 64);
  EXPECT_EQ(m.by_priority[proactive].bytes_received, 4u * 2 * 64 * 4096);
  // The sender counts a frame after its send returns, which may be after the receiver is done.
  const Deadline counted = Deadline::After(core::Seconds(5));
  while (!counted.Expired() &&
         p.prefill->GetMetrics().by_priority[proactive].bytes_sent < 4u * 2 * 64 * 4096) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(p.prefill->GetMetrics().by_priority[proactive].bytes_sent, 4u * 2 * 64 * 4096);
  EXPECT_EQ(m.rejected_corrupt, 0u);
}

TEST_P(TransferConformance, PushDeliversEveryByte) {
  EndpointPair p = Pair(48);
  ASSERT_TRUE(p.prefill);
  auto h = p.prefill->Post(p.decode_peer, {Direction::kPush, Priority::kSpeculative,
                                           AllRanges(TestGeometry(), kRequest, 48)});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_TRUE(p.prefill->Wait(*h, Deadline::After(core::Seconds(20))).ok());
  EXPECT_EQ(p.decode_store->PresentBlocks(kRequest), 4u * 2 * 48);
  EXPECT_TRUE(p.decode_store->VerifyRequest(kRequest).ok());
  EXPECT_EQ(p.decode_store->ready_count(), 4u * 2 * 48);  // each block reported once
}

TEST_P(TransferConformance, ScatteredBlocksArriveAsCoalescedRuns) {
  EndpointPair p = Pair(32);
  ASSERT_TRUE(p.decode);
  std::vector<BlockRange> ranges;
  for (std::int32_t b : {3, 4, 5, 9, 31, 0, 4}) ranges.push_back({kRequest, 2, 1, b, 1});
  auto h = p.decode->Post(p.prefill_peer, {Direction::kPull, Priority::kOnDemand, ranges});
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(p.decode->Wait(*h, Deadline::After(core::Seconds(10))).ok());
  EXPECT_EQ(p.decode->Poll(*h)->blocks_total, 6u);  // duplicates merged
  EXPECT_EQ(p.decode_store->PresentBlocks(kRequest), 6u);
  EXPECT_TRUE(p.decode_store->IsPresent({kRequest, 2, 1, 31}));
  EXPECT_FALSE(p.decode_store->IsPresent({kRequest, 2, 1, 6}));
  EXPECT_TRUE(p.decode_store->VerifyRequest(kRequest).ok());
}

// Int8 copies (TransferRequest::wire): pulled and pushed blocks land approximate, at about
// half the bytes; an exact copy of the same blocks then replaces them.
TEST_P(TransferConformance, Int8CopiesLandApproximateAndExactCopiesReplaceThem) {
  EndpointPair p = Pair(16);
  ASSERT_TRUE(p.decode);
  const std::uint64_t n = 4u * 2 * 16;
  TransferRequest pull{Direction::kPull, Priority::kOnDemand,
                       AllRanges(TestGeometry(), kRequest, 8)};
  pull.wire = WireFormat::kInt8;
  auto h = p.decode->Post(p.prefill_peer, pull);
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(p.decode->Wait(*h, Deadline::After(core::Seconds(10))).ok());
  std::vector<BlockRange> rest;
  for (const BlockRange& r : AllRanges(TestGeometry(), kRequest, 16)) {
    rest.push_back({kRequest, r.layer, r.kv_head, 8, 8});
  }
  TransferRequest push{Direction::kPush, Priority::kProactive, rest};
  push.wire = WireFormat::kInt8;
  auto pushed = p.prefill->Post(p.decode_peer, push);
  ASSERT_TRUE(pushed.ok());
  ASSERT_TRUE(p.prefill->Wait(*pushed, Deadline::After(core::Seconds(10))).ok());
  EXPECT_EQ(p.decode_store->PresentBlocks(kRequest), n);
  EXPECT_EQ(p.decode_store->approximate_count(), n);
  EXPECT_TRUE(p.decode_store->IsApproximate({kRequest, 3, 1, 15}));
  EXPECT_FALSE(p.decode_store->IsPresent({kRequest, 3, 1, 15}));
  const Metrics m = p.decode->GetMetrics();
  const PriorityMetrics& od = m.by_priority[static_cast<int>(Priority::kOnDemand)];
  EXPECT_EQ(od.int8_blocks_received, n / 2);
  EXPECT_EQ(od.bytes_received, n / 2 * Int8BlockBytes(TestGeometry()));
  // (The receiver counts before it acknowledges; the sender's counts may trail its Wait.)
  EXPECT_EQ(m.by_priority[static_cast<int>(Priority::kProactive)].int8_blocks_received, n / 2);

  // The exact copies replace every approximate one and hold the source's bytes.
  auto exact = p.decode->Post(p.prefill_peer, {Direction::kPull, Priority::kSpeculative,
                                               AllRanges(TestGeometry(), kRequest, 16)});
  ASSERT_TRUE(exact.ok());
  ASSERT_TRUE(p.decode->Wait(*exact, Deadline::After(core::Seconds(10))).ok());
  EXPECT_TRUE(p.decode_store->IsPresent({kRequest, 3, 1, 15}));
  EXPECT_FALSE(p.decode_store->IsApproximate({kRequest, 0, 0, 0}));
  EXPECT_EQ(p.decode_store->PresentBlocks(kRequest), n);
  EXPECT_TRUE(p.decode_store->VerifyRequest(kRequest).ok());
  // An int8 copy of a block held exactly is dropped, never written over it.
  auto late = p.decode->Post(p.prefill_peer, pull);
  ASSERT_TRUE(late.ok());
  ASSERT_TRUE(p.decode->Wait(*late, Deadline::After(core::Seconds(10))).ok());
  EXPECT_TRUE(p.decode_store->IsPresent({kRequest, 0, 0, 0}));
  EXPECT_TRUE(p.decode_store->VerifyRequest(kRequest).ok());
}

TEST_P(TransferConformance, ControlMessagesArriveInOrder) {
  std::mutex mu;
  std::vector<std::string> got;
  EndpointCallbacks dcb;
  dcb.on_control = [&](PeerId, std::uint32_t type, ConstBytes bytes) {
    std::lock_guard<std::mutex> lock(mu);
    got.push_back(std::to_string(type) + ":" +
                  std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  };
  EndpointPair p = Pair(4, TestConfig("prefill"), TestConfig("decode"), {}, dcb);
  ASSERT_TRUE(p.prefill);
  for (int i = 0; i < 20; ++i) {
    const std::string text = "msg" + std::to_string(i);
    ASSERT_TRUE(p.prefill->SendControl(p.decode_peer, 100 + i,
                                       ConstBytes(reinterpret_cast<const std::byte*>(text.data()),
                                                  text.size())).ok());
  }
  const Deadline d = Deadline::After(core::Seconds(5));
  while (!d.Expired()) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (got.size() == 20) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(got.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(got[i], std::to_string(100 + i) + ":msg" + std::to_string(i));
}

TEST_P(TransferConformance, CancelEndsTransferAndPeerStopsServing) {
  EndpointConfig prefill = TestConfig("prefill");
  prefill.link.gbps = 0.05;  // 2 MiB take about 0.3 s
  EndpointPair p = Pair(64, prefill);
  ASSERT_TRUE(p.decode);
  auto h = p.decode->Post(p.prefill_peer, {Direction::kPull, Priority::kSpeculative,
                                           AllRanges(TestGeometry(), kRequest, 64)});
  ASSERT_TRUE(h.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  ASSERT_TRUE(p.decode->Cancel(*h).ok());
  EXPECT_EQ(p.decode->Wait(*h, Deadline::After(core::Seconds(1))).code(), StatusCode::kCancelled);
  EXPECT_EQ(p.decode->Poll(*h)->state, TransferState::kCancelled);
  // The peer drops the rest of the job: its queue drains without sending it.
  const Deadline d = Deadline::After(core::Seconds(5));
  while (!d.Expired() && p.prefill->GetMetrics().queue_depth_blocks > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(p.prefill->GetMetrics().queue_depth_blocks, 0u);
  EXPECT_LT(p.decode_store->PresentBlocks(kRequest), 4u * 2 * 64);
  EXPECT_TRUE(p.decode->Cancel(*h).ok());  // idempotent
}

TEST_P(TransferConformance, DeadlineBoundsEveryTransfer) {
  EndpointPair p = Pair(8);
  ASSERT_TRUE(p.decode);
  p.prefill_store->SetAvailableLayers(kRequest, 0);  // nothing is ever computed
  core::Stopwatch watch;
  auto h = p.decode->Post(p.prefill_peer, {Direction::kPull, Priority::kOnDemand,
                                           {{kRequest, 0, 0, 0, 8}},
                                           Deadline::After(core::Millis(300))});
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(p.decode->Wait(*h, Deadline::After(core::Seconds(10))).code(),
            StatusCode::kDeadlineExceeded);
  EXPECT_LT(watch.ElapsedSeconds(), 5.0);
  EXPECT_EQ(p.decode->Poll(*h)->state, TransferState::kFailed);
}

TEST_P(TransferConformance, WaitWithEarlyDeadlineReportsInProgress) {
  EndpointPair p = Pair(8);
  ASSERT_TRUE(p.decode);
  p.prefill_store->SetAvailableLayers(kRequest, 0);
  auto h = p.decode->Post(p.prefill_peer, {Direction::kPull, Priority::kOnDemand,
                                           {{kRequest, 1, 0, 0, 8}}});
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(p.decode->Wait(*h, Deadline::After(core::Millis(20))).code(),
            StatusCode::kDeadlineExceeded);
  EXPECT_EQ(p.decode->Poll(*h)->state, TransferState::kInProgress);  // a state, not an error
  p.prefill_store->SetAvailableLayers(kRequest, 4);
  p.prefill->NotifySourceReady();
  EXPECT_TRUE(p.decode->Wait(*h, Deadline::After(core::Seconds(10))).ok());
  EXPECT_TRUE(p.decode_store->VerifyRequest(kRequest).ok());
}

TEST_P(TransferConformance, PeerGoneFailsTransfersRetryably) {
  EndpointConfig prefill = TestConfig("prefill");
  prefill.link.gbps = 0.02;
  EndpointPair p = Pair(64, prefill);
  ASSERT_TRUE(p.decode);
  auto h = p.decode->Post(p.prefill_peer, {Direction::kPull, Priority::kSpeculative,
                                           AllRanges(TestGeometry(), kRequest, 64)});
  ASSERT_TRUE(h.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  p.prefill.reset();  // the prefill node goes away mid-transfer
  const Status st = p.decode->Wait(*h, Deadline::After(core::Seconds(5)));
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_TRUE(IsRetryable(st.code()));
  EXPECT_FALSE(p.decode->IsConnected(p.prefill_peer));
  EXPECT_EQ(p.decode->Post(p.prefill_peer, {Direction::kPull, Priority::kOnDemand,
                                            {{kRequest, 0, 0, 0, 1}}})
                .status()
                .code(),
            StatusCode::kUnavailable);
}

TEST_P(TransferConformance, FinishAndCancelReleaseSenderLeases) {
  EndpointPair p = Pair(8);
  ASSERT_TRUE(p.decode);
  ASSERT_TRUE(p.prefill_store->AddRequest(8, 8, true).ok());
  ASSERT_TRUE(p.decode_store->AddRequest(8, 8, false).ok());
  auto a = p.decode->Post(p.prefill_peer, {Direction::kPull, Priority::kOnDemand,
                                           AllRanges(TestGeometry(), kRequest, 8)});
  auto b = p.decode->Post(p.prefill_peer, {Direction::kPull, Priority::kOnDemand,
                                           {{8, 0, 0, 0, 8}}});
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(p.decode->Wait(*a, Deadline::After(core::Seconds(10))).ok());
  ASSERT_TRUE(p.decode->Wait(*b, Deadline::After(core::Seconds(10))).ok());
  ASSERT_TRUE(p.decode->FinishRequest(p.prefill_peer, kRequest).ok());
  p.decode->CancelRequest(8);
  const Deadline d = Deadline::After(core::Seconds(5));
  while (!d.Expired() && p.prefill_store->releases().size() < 2) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto releases = p.prefill_store->releases();
  ASSERT_EQ(releases.size(), 2u);
  EXPECT_EQ(releases[0], std::make_pair(kRequest, ReleaseReason::kCompleted));
  EXPECT_EQ(releases[1], std::make_pair(std::uint64_t{8}, ReleaseReason::kCancelled));
  // A released request is refused, with a reason.
  auto late = p.decode->Post(p.prefill_peer, {Direction::kPull, Priority::kOnDemand,
                                              {{kRequest, 0, 0, 0, 1}}});
  ASSERT_TRUE(late.ok());
  const Status st = p.decode->Wait(*late, Deadline::After(core::Seconds(5)));
  EXPECT_NE(st.code(), StatusCode::kOk);
  EXPECT_NE(st.code(), StatusCode::kDeadlineExceeded) << st.ToString();
  const Metrics m = p.prefill->GetMetrics();
  EXPECT_EQ(m.leases_completed, 1u);
  EXPECT_EQ(m.leases_cancelled, 1u);
  EXPECT_EQ(m.leases_active, 0u);
}

// DESIGN.md 6 / issue 4.3: an on-demand request posted while a 50 MB speculative stream is in
// flight is served at the next block-run boundary, not after the stream.
TEST_P(TransferConformance, OnDemandOvertakesSpeculativeStream) {
  constexpr std::uint32_t kBlocks = 1600;  // 8 rows x 1600 x 4 KiB = 52 MB
  EndpointConfig prefill = TestConfig("prefill");
  prefill.link.gbps = 1.0;  // the stream takes ~0.4 s; the socket buffers stay near empty
  EndpointPair p = Pair(kBlocks, prefill);
  ASSERT_TRUE(p.prefill);
  const auto spec = static_cast<int>(Priority::kSpeculative);
  auto stream = p.prefill->Post(p.decode_peer, {Direction::kPush, Priority::kSpeculative,
                                                AllRanges(TestGeometry(), kRequest, kBlocks)});
  ASSERT_TRUE(stream.ok());
  const Deadline started = Deadline::After(core::Seconds(10));
  while (!started.Expired() &&
         p.decode->GetMetrics().by_priority[spec].bytes_received < (2u << 20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const std::uint64_t before = p.decode->GetMetrics().by_priority[spec].bytes_received;
  ASSERT_GE(before, 2u << 20);
  // The last blocks of the stream.
  auto urgent = p.decode->Post(p.prefill_peer, {Direction::kPull, Priority::kOnDemand,
                                                {{kRequest, 3, 1, kBlocks - 8, 8}}});
  ASSERT_TRUE(urgent.ok());
  ASSERT_TRUE(p.decode->Wait(*urgent, Deadline::After(core::Seconds(10))).ok());
  const std::uint64_t after = p.decode->GetMetrics().by_priority[spec].bytes_received;
  std::printf("%s: %.0f KB of the stream arrived while the on-demand pull was served\n",
              GetParam().name.c_str(), (after - before) / 1e3);
  // Stream bytes that got in first: the frames already on the link (156 KB each at 1 Gbit/s; the
  // loopback pipe holds 1 MiB) - not the remaining ~45 MB. A receiver slowed down by the
  // sanitizers lets TCP's socket buffers fill, and those bytes cannot be overtaken.
  EXPECT_LE(after - before, kSanitized ? (12u << 20) : (3u << 20))
      << "on-demand waited behind the stream";
  EXPECT_EQ(p.prefill->Poll(*stream)->state, TransferState::kInProgress);
  EXPECT_TRUE(p.decode_store->IsPresent({kRequest, 3, 1, kBlocks - 1}));
  EXPECT_GE(p.decode->GetMetrics().by_priority[0].blocks_received, 8u);
  ASSERT_TRUE(p.prefill->Cancel(*stream).ok());
}

TEST_P(TransferConformance, SlowLinkQueuesFramesWithoutSendingThemTwice) {
  // 8 rows x 256 x 4 KiB = 8.4 MB at 50 Mbit/s: 1.3 s of frames queued on the link, several
  // retransmit timeouts (300 ms) long. Acks keep coming, so nothing is taken for lost.
  constexpr std::uint32_t kBlocks = 256;
  EndpointConfig prefill = TestConfig("prefill");
  prefill.link.gbps = 0.05;
  EndpointPair p = Pair(kBlocks, prefill);
  ASSERT_TRUE(p.prefill);
  auto h = p.prefill->Post(p.decode_peer, {Direction::kPush, Priority::kSpeculative,
                                           AllRanges(TestGeometry(), kRequest, kBlocks)});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_TRUE(p.prefill->Wait(*h, Deadline::After(core::Seconds(30))).ok());
  EXPECT_EQ(p.decode_store->PresentBlocks(kRequest), 8u * kBlocks);
  EXPECT_EQ(p.prefill->GetMetrics().retries, 0u);
  EXPECT_EQ(p.decode->GetMetrics().duplicates, 0u);
  // The sender measured the link it was held to (frames sent with more queued behind them):
  // never faster than the emulated rate, and close to it unless the machine is slowed down.
  const double measured = p.prefill->LinkBytesPerSecond(p.decode_peer);
  const double configured = 0.05e9 / 8;
  EXPECT_LT(measured, 1.15 * configured);
  if (!kSanitized) EXPECT_GT(measured, 0.5 * configured);
  EXPECT_EQ(p.decode->LinkBytesPerSecond(p.prefill_peer), 0.0) << "the decode side sent no data";
}

TEST_P(TransferConformance, ConnectionCarriesGatheredFrames) {
  auto listener = prefill_transport_->Listen(AnyAddress(*prefill_transport_));
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();
  std::unique_ptr<Connection> server;
  std::thread accept([&] {
    auto c = (*listener)->Accept(Deadline::After(core::Seconds(10)));
    if (c.ok()) server = std::move(*c);
  });
  auto client = decode_transport_->Connect((*listener)->address(), Deadline::After(core::Seconds(10)));
  accept.join();
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  ASSERT_TRUE(server);
  std::vector<std::byte> data(1 << 20);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i * 131 + 7);
  // 50 frames, payload gathered from 1..40 parts, received into a different split.
  std::thread sender([&] {
    for (int f = 0; f < 50; ++f) {
      EncodedHeader header{};
      header[0] = static_cast<std::byte>(f);
      std::vector<ConstBytes> parts;
      std::size_t at = f * 997, size = 1000 + f * 4000;
      for (int i = 0; i <= f % 40 && size > 0; ++i) {
        const std::size_t n = std::min<std::size_t>(size, 100 + i * 700);
        parts.push_back(ConstBytes(data).subspan(at, n));
        at += n;
        size -= n;
      }
      if (size > 0) parts.push_back(ConstBytes(data).subspan(at, size));
      ASSERT_TRUE((*client)->Send(header, parts, Deadline::After(core::Seconds(10))).ok());
    }
  });
  std::vector<std::byte> got(1 << 20);
  for (int f = 0; f < 50; ++f) {
    EncodedHeader header{};
    ASSERT_TRUE(server->ReceiveHeader(header, Deadline::After(core::Seconds(10))).ok());
    EXPECT_EQ(header[0], static_cast<std::byte>(f));
    const std::size_t size = 1000 + f * 4000;
    std::vector<MutableBytes> parts = {MutableBytes(got).first(size / 3),
                                       MutableBytes(got).subspan(size / 3, size - size / 3)};
    ASSERT_TRUE(server->ReceivePayload(parts, Deadline::After(core::Seconds(10))).ok());
    EXPECT_EQ(std::memcmp(got.data(), data.data() + f * 997, size), 0) << "frame " << f;
  }
  sender.join();
  // Closing one end fails the other's receive as "unavailable" (retryable), not a hang.
  (*client)->Shutdown();
  EncodedHeader header{};
  EXPECT_EQ(server->ReceiveHeader(header, Deadline::After(core::Seconds(5))).code(),
            StatusCode::kUnavailable);
  EXPECT_EQ((*client)->ReceiveHeader(header, Deadline::After(core::Seconds(5))).code(),
            StatusCode::kCancelled);
}

#ifdef SMARTGEN_CONFORMANCE_NET
INSTANTIATE_TEST_SUITE_P(TransferNet, TransferConformance, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });
#else
INSTANTIATE_TEST_SUITE_P(InProcess, TransferConformance, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });
#endif

}  // namespace
}  // namespace smartgen::transfer::testing
