#include "sim/link.h"

#include <gtest/gtest.h>

#include <vector>

#include "transfer/frame.h"
#include "transfer/rate_limiter.h"

namespace smartgen::sim {
namespace {

constexpr double kGbps = 1.0;            // 125 MB/s
constexpr double kBps = kGbps * 1e9 / 8;
constexpr double kFrame = 64 * 1024;

// A link without frame headers, for the tests of its rate, priorities and bursts.
LinkConfig Bare(double gbps, double latency_s, double frame_bytes) {
  LinkConfig c{gbps, latency_s, frame_bytes};
  c.header_bytes = 0;
  return c;
}

TEST(SimLink, ArrivalIsSerialisationPlusLatency) {
  EventQueue q;
  Link link(&q, Bare(kGbps, 0.002, kFrame));
  double arrived = -1;
  link.Send(Path::kFull, 1e6, [&] { arrived = q.now(); });
  q.RunAll();
  EXPECT_NEAR(arrived, 1e6 / kBps + 0.002, 1e-12);
  EXPECT_NEAR(link.bytes_sent(Path::kFull), 1e6, 1e-6);
  EXPECT_NEAR(link.busy_seconds(), 1e6 / kBps, 1e-12);
}

TEST(SimLink, FifoWithinAClass) {
  EventQueue q;
  Link link(&q, Bare(kGbps, 0, kFrame));
  std::vector<int> order;
  std::vector<double> at;
  link.Send(Path::kProactive, 5e5, [&] { order.push_back(0); at.push_back(q.now()); });
  link.Send(Path::kProactive, 5e5, [&] { order.push_back(1); at.push_back(q.now()); });
  q.RunAll();
  EXPECT_EQ(order, (std::vector<int>{0, 1}));
  EXPECT_NEAR(at[1], 1e6 / kBps, 1e-12);
}

TEST(SimLink, OnDemandPreemptsSpeculativeAtTheFrameBoundary) {
  EventQueue q;
  Link link(&q, Bare(kGbps, 0, kFrame));
  double spec_done = -1, od_done = -1;
  const double spec = 10e6, od = 64 * 1024;
  link.Send(Path::kSpeculative, spec, [&] { spec_done = q.now(); });
  // Posted 1.5 frames into the stream: waits for the end of frame 2.
  const double posted = 1.5 * kFrame / kBps;
  q.At(posted, [&] { link.Send(Path::kOnDemand, od, [&] { od_done = q.now(); }); });
  q.RunAll();
  EXPECT_NEAR(od_done, 2 * kFrame / kBps + od / kBps, 1e-9);
  // The stream loses exactly the on-demand transfer's time; nothing is sent twice.
  EXPECT_NEAR(spec_done, (spec + od) / kBps, 1e-9);
  EXPECT_NEAR(link.total_bytes_sent(), spec + od, 1e-3);
}

TEST(SimLink, PriorityClassesOrderQueuedTransfers) {
  EventQueue q;
  Link link(&q, Bare(kGbps, 0, kFrame));
  std::vector<Path> order;
  link.Send(Path::kControl, 64, [&] { order.push_back(Path::kControl); });
  link.Send(Path::kSpeculative, 1e5, [&] { order.push_back(Path::kSpeculative); });
  link.Send(Path::kProactive, 1e5, [&] { order.push_back(Path::kProactive); });
  link.Send(Path::kOnDemand, 1e5, [&] { order.push_back(Path::kOnDemand); });
  q.RunAll();
  EXPECT_EQ(order, (std::vector<Path>{Path::kControl, Path::kOnDemand, Path::kProactive,
                                       Path::kSpeculative}));
}

TEST(SimLink, CancelDropsTheUnsentPartAndItsCallback) {
  EventQueue q;
  Link link(&q, Bare(kGbps, 0, kFrame));
  bool ran = false;
  const std::uint64_t id = link.Send(Path::kSpeculative, 1e6, [&] { ran = true; });
  double unsent = -1;
  q.At(0.25e6 / kBps, [&] { unsent = link.Cancel(id); });
  q.RunAll();
  EXPECT_FALSE(ran);
  EXPECT_NEAR(unsent, 0.75e6, 1e-3);
  EXPECT_NEAR(link.bytes_sent(Path::kSpeculative), 0.25e6, 1e-3);
  EXPECT_EQ(link.Cancel(id), 0);
}

TEST(SimLink, EngineFrameRule) {
  // 5 ms at 27.8 Mbit/s is below 64 KiB: a quarter of 64 KiB less the header.
  EXPECT_DOUBLE_EQ(EngineFrameBytes(0.0278), 16 * 1024 - 64);
  // 5 ms at 25 Gbit/s is 15.6 MB: capped at the engine's 1 MiB frame.
  EXPECT_DOUBLE_EQ(EngineFrameBytes(25), 1024 * 1024);
  EXPECT_DOUBLE_EQ(EngineFrameBytes(0.4), 0.005 * 0.4e9 / 8 / 4 - 64);
  // Whole blocks within the cap (transfer/endpoint_lifecycle.cc): three 4 KiB blocks fit in
  // 16 KiB less the header, four in a quarter of 5 ms at 124.8 Mbit/s; at least one block.
  EXPECT_DOUBLE_EQ(EngineFrameBytes(0.0278, 4096), 3 * 4096);
  EXPECT_DOUBLE_EQ(EngineFrameBytes(0.1248, 4096), 4 * 4096);
  EXPECT_DOUBLE_EQ(EngineFrameBytes(0.0278, 64 * 1024), 64 * 1024);
}

TEST(SimLink, TheEnginesHeaderAndBucketAreTheTransferEnginesOwn) {
  // sim does not link the transfer engine: its copies of the engine's figures are checked here.
  EXPECT_EQ(kEngineFrameHeaderBytes, static_cast<double>(transfer::kFrameHeaderBytes));
  for (double gbps : {0.0278, 0.1248, 0.4, 25.0}) {
    const transfer::RateLimiter limiter(gbps * 1e9);
    EXPECT_NEAR(EngineBucketBytes(gbps), static_cast<double>(limiter.burst_bytes()), 1.0) << gbps;
  }
}

TEST(SimLink, EveryFramesHeaderTakesWireTimeButIsNotPayload) {
  // The engine's rate limiter counts each frame's 64-byte header (transfer/endpoint_sender.cc):
  // a KV stream in 12 KiB frames is 0.52 % slower than its payload at the line rate.
  EventQueue q;
  LinkConfig c{kGbps, 0.001, kFrame};
  ASSERT_EQ(c.header_bytes, 64);
  Link link(&q, c);
  const double frame = 3 * 4096;
  double arrived = -1, small = -1;
  link.Send(Path::kLayerwise, 1e6, [&] { arrived = q.now(); }, frame);
  q.RunAll();
  EXPECT_NEAR(arrived, 1e6 * (frame + 64) / frame / kBps + 0.001, 1e-12);
  EXPECT_NEAR(link.bytes_sent(Path::kLayerwise), 1e6, 1e-6);
  EXPECT_NEAR(link.busy_seconds(), 1e6 * (frame + 64) / frame / kBps, 1e-12);
  // One-block frames pay the header once per block.
  const double t0 = q.now();
  link.Send(Path::kOnDemand, 8 * 4096, [&] { small = q.now(); }, 4096);
  q.RunAll();
  EXPECT_NEAR(small - t0, 8 * (4096 + 64) / kBps + 0.001, 1e-12);
}

TEST(SimLink, ABurstSpendsItsCreditOnHeadersToo) {
  // A full bucket of 64 KiB sends 64 KiB of wire bytes at once: payload plus headers.
  EventQueue q;
  LinkConfig c{kGbps, 0, kFrame};
  c.burst_bytes = 64 * 1024;
  Link link(&q, c);
  const double frame = 4096;
  double arrived = -1;
  link.Send(Path::kFull, 1e6, [&] { arrived = q.now(); }, frame);
  q.RunAll();
  const double wpb = (frame + 64) / frame;
  EXPECT_NEAR(arrived, (1e6 * wpb - 64 * 1024) / kBps, 1e-12);
}

}  // namespace
}  // namespace smartgen::sim
