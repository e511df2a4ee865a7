// Two processes over real sockets (issue 4.1 and the fault matrix's "peer killed"): a forked
// prefill server and this process as the decode side, over tcp and over ucx (tcp and shared
// memory). The server is this test binary again (ChildProcess), so it starts clean.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <thread>

#include "transfer/transport_factory.h"
#include "transfer_test_util.h"

namespace smartgen::transfer::testing {
namespace {

constexpr std::uint64_t kPulled = 1;  // prefill -> decode
constexpr std::uint64_t kPushed = 2;  // decode -> prefill
// 8 rows x 4 KiB blocks: 7168 blocks per row = 235 MB (64 MB under the sanitizers).
constexpr std::uint32_t kPullBlocks = kSanitized ? 2048 : 7168;
constexpr std::uint32_t kPushBlocks = 1024;  // 33 MB
constexpr std::uint32_t kKilledBlocks = 1024;  // 33 MB: ~2.7 s at 100 Mbit/s

struct Case {
  std::string name;
  std::string transport;
  std::string ucx_tls;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::shared_ptr<Transport> MakeOrDie(const Case& c) {
  auto t = MakeTransport(c.transport, TransportOptions{c.ucx_tls});
  if (!t.ok()) {
    std::fprintf(stderr, "transport: %s\n", t.status().ToString().c_str());
    std::abort();
  }
  return *t;
}

// The prefill side: serves kPulled, receives kPushed, exits 0 when it got every pushed byte
// right and the peer said goodbye.
int Serve(const Case& c, int out, double gbps, std::uint32_t pull_blocks) {
  auto transport = MakeOrDie(c);
  MemoryBlockStore store(TestGeometry());
  if (!store.AddRequest(kPulled, pull_blocks, true).ok()) return 10;
  if (!store.AddRequest(kPushed, kPushBlocks, false).ok()) return 11;
  EndpointConfig config = TestConfig("prefill");
  config.link.gbps = gbps;
  auto ep = Endpoint::Create(config, transport, &store, &store);
  if (!ep.ok()) return 12;
  auto address = (*ep)->Listen("127.0.0.1:0");
  if (!address.ok()) return 13;
  WriteLine(out, *address);
  auto peer = (*ep)->Accept(Deadline::After(core::Seconds(30)));
  if (!peer.ok()) return 14;
  const Deadline limit = Deadline::After(core::Seconds(90));
  while ((*ep)->IsConnected(*peer) && !limit.Expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (store.PresentBlocks(kPushed) != 8ull * kPushBlocks) return 15;
  return store.VerifyRequest(kPushed).ok() ? 0 : 16;
}

class TransferNetTwoProcess : public ::testing::TestWithParam<Case> {};

TEST_P(TransferNetTwoProcess, ExchangeHundredsOfMegabytesExactly) {
  const Case c = GetParam();
  if (ChildRole() == "server") _exit(Serve(c, ChildOutFd(), 0, kPullBlocks));
  ChildProcess child("server");
  const std::string address = child.ReadLine(core::Seconds(20));
  ASSERT_FALSE(address.empty()) << "the server did not start";

  auto transport = MakeOrDie(c);
  MemoryBlockStore store(TestGeometry());
  ASSERT_TRUE(store.AddRequest(kPulled, kPullBlocks, false).ok());
  ASSERT_TRUE(store.AddRequest(kPushed, kPushBlocks, true).ok());
  auto ep = Endpoint::Create(TestConfig("decode"), transport, &store, &store);
  ASSERT_TRUE(ep.ok());
  auto peer = (*ep)->Connect(address, Deadline::After(core::Seconds(10)));
  ASSERT_TRUE(peer.ok()) << peer.status().ToString();

  core::Stopwatch watch;
  auto pull = (*ep)->Post(*peer, {Direction::kPull, Priority::kSpeculative,
                                  AllRanges(TestGeometry(), kPulled, kPullBlocks)});
  auto push = (*ep)->Post(*peer, {Direction::kPush, Priority::kProactive,
                                  AllRanges(TestGeometry(), kPushed, kPushBlocks)});
  ASSERT_TRUE(pull.ok() && push.ok());
  const Status pulled = (*ep)->Wait(*pull, Deadline::After(core::Seconds(60)));
  const Status pushed = (*ep)->Wait(*push, Deadline::After(core::Seconds(60)));
  const double seconds = watch.ElapsedSeconds();
  ASSERT_TRUE(pulled.ok()) << pulled.ToString();
  ASSERT_TRUE(pushed.ok()) << pushed.ToString();
  const double bytes = 8.0 * 4096 * (kPullBlocks + kPushBlocks);
  std::printf("%s: %.0f MB both ways in %.2f s (%.2f Gbit/s)\n", c.name.c_str(), bytes / 1e6,
              seconds, bytes * 8 / seconds / 1e9);
  EXPECT_EQ(store.PresentBlocks(kPulled), 8ull * kPullBlocks);
  EXPECT_TRUE(store.VerifyRequest(kPulled).ok());
  EXPECT_EQ((*ep)->GetMetrics().rejected_corrupt, 0u);
  (*ep)->Disconnect(*peer);
  EXPECT_EQ(child.Wait(core::Seconds(30)), 0) << "the server saw wrong pushed bytes";
}

TEST_P(TransferNetTwoProcess, PeerKilledMidTransferFailsWithinDeadline) {
  const Case c = GetParam();
  if (ChildRole() == "server") _exit(Serve(c, ChildOutFd(), 0.1, kKilledBlocks));
  ChildProcess child("server");
  const std::string address = child.ReadLine(core::Seconds(20));
  ASSERT_FALSE(address.empty());

  auto transport = MakeOrDie(c);
  MemoryBlockStore store(TestGeometry());
  ASSERT_TRUE(store.AddRequest(kPulled, kKilledBlocks, false).ok());
  auto ep = Endpoint::Create(TestConfig("decode"), transport, nullptr, &store);
  ASSERT_TRUE(ep.ok());
  auto peer = (*ep)->Connect(address, Deadline::After(core::Seconds(10)));
  ASSERT_TRUE(peer.ok()) << peer.status().ToString();
  auto pull = (*ep)->Post(*peer, {Direction::kPull, Priority::kSpeculative,
                                  AllRanges(TestGeometry(), kPulled, kKilledBlocks)});
  ASSERT_TRUE(pull.ok());
  const Deadline started = Deadline::After(core::Seconds(10));
  while (!started.Expired() && (*ep)->Poll(*pull)->blocks_done < 64) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_GE((*ep)->Poll(*pull)->blocks_done, 64u);
  child.Kill();  // SIGKILL mid-transfer
  core::Stopwatch watch;
  const Status st = (*ep)->Wait(*pull, Deadline::After(core::Seconds(10)));
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_LT(watch.ElapsedSeconds(), 3.0);  // heartbeat timeout is 2 s; EOF is usually at once
  EXPECT_FALSE((*ep)->IsConnected(*peer));
  EXPECT_TRUE(store.VerifyRequest(kPulled).ok());  // what was accepted is right
}

INSTANTIATE_TEST_SUITE_P(Transports, TransferNetTwoProcess,
                         ::testing::Values(Case{"tcp", "tcp", ""},
                                           Case{"ucx_tcp", "ucx", "tcp"},
                                           Case{"ucx_shm", "ucx", "posix,cma,self"}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace smartgen::transfer::testing
