// The tcp transport over IPv6 (issue 11): an endpoint listening on [::1] serves a pull to one
// that connects there, and one listening on [::] (dual-stack) takes an IPv4 peer. Loopback
// only; skipped with the reason when this host has no IPv6 loopback.
#include <gtest/gtest.h>

#include "transfer/socket.h"
#include "transfer/tcp/tcp_transport.h"
#include "transfer_test_util.h"

namespace smartgen::transfer::testing {
namespace {

bool HasIpv6Loopback() {
  std::string bound;
  return TcpListen(HostPort{"::1", 0}, &bound).ok();
}

// A filled prefill endpoint listening on `listen`, a decode endpoint connecting to the bound
// address with its host replaced by `connect_host`; every block pulled and checked.
void PullOver(const std::string& listen, const std::string& connect_host) {
  constexpr std::uint32_t kBlocks = 16;
  MemoryBlockStore source(TestGeometry()), sink(TestGeometry());
  ASSERT_TRUE(source.AddRequest(1, kBlocks, true).ok());
  ASSERT_TRUE(sink.AddRequest(1, kBlocks, false).ok());
  auto tcp = std::make_shared<TcpTransport>();
  auto prefill = Endpoint::Create(TestConfig("prefill"), tcp, &source, nullptr);
  auto decode = Endpoint::Create(TestConfig("decode"), tcp, nullptr, &sink);
  ASSERT_TRUE(prefill.ok() && decode.ok());
  auto bound = (*prefill)->Listen(listen);
  ASSERT_TRUE(bound.ok()) << bound.status().ToString();
  auto hp = ParseHostPort(*bound);
  ASSERT_TRUE(hp.ok()) << *bound;
  const std::string target = FormatHostPort(connect_host, hp->port);
  auto peer = (*decode)->Connect(target, Deadline::After(core::Seconds(10)));
  ASSERT_TRUE(peer.ok()) << target << ": " << peer.status().ToString();
  ASSERT_TRUE((*prefill)->Accept(Deadline::After(core::Seconds(10))).ok());
  auto h = (*decode)->Post(*peer, {Direction::kPull, Priority::kOnDemand,
                                   AllRanges(TestGeometry(), 1, kBlocks)});
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE((*decode)->Wait(*h, Deadline::After(core::Seconds(20))).ok());
  EXPECT_TRUE(sink.VerifyRequest(1).ok());
}

TEST(TransferNetIpv6, ListensAndConnectsOnIpv6Loopback) {
  if (!HasIpv6Loopback()) GTEST_SKIP() << "no IPv6 loopback (::1) on this host";
  std::string bound;
  auto fd = TcpListen(HostPort{"::1", 0}, &bound);
  ASSERT_TRUE(fd.ok());
  EXPECT_EQ(bound.rfind("[::1]:", 0), 0u) << bound;
  PullOver("[::1]:0", "::1");
}

TEST(TransferNetIpv6, DualStackWildcardTakesIpv4Peers) {
  if (!HasIpv6Loopback()) GTEST_SKIP() << "no IPv6 loopback (::1) on this host";
  std::string bound;
  auto listener = TcpListen(HostPort{"::", 0}, &bound);
  ASSERT_TRUE(listener.ok());
  EXPECT_EQ(bound.rfind("[::]:", 0), 0u) << bound;
  auto hp = ParseHostPort(bound);
  ASSERT_TRUE(hp.ok());
  auto client = TcpConnect(HostPort{"127.0.0.1", hp->port}, Deadline::After(core::Seconds(5)));
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto server = TcpAccept(listener->get(), -1, Deadline::After(core::Seconds(5)));
  ASSERT_TRUE(server.ok());
  // An IPv4 peer of a dual-stack socket reads as plain IPv4, not ::ffff:127.0.0.1.
  EXPECT_EQ(PeerAddress(server->get()).rfind("127.0.0.1:", 0), 0u) << PeerAddress(server->get());
  PullOver("[::]:0", "127.0.0.1");
  PullOver("[::]:0", "::1");
}

TEST(TransferNetIpv6, NameResolvingToSeveralAddressesConnects) {
  if (!HasIpv6Loopback()) GTEST_SKIP() << "no IPv6 loopback (::1) on this host";
  // "localhost" may resolve to ::1 first; a listener on 127.0.0.1 only is still reached by
  // trying the next address.
  std::string bound;
  auto listener = TcpListen(HostPort{"127.0.0.1", 0}, &bound);
  ASSERT_TRUE(listener.ok());
  auto hp = ParseHostPort(bound);
  ASSERT_TRUE(hp.ok());
  auto client = TcpConnect(HostPort{"localhost", hp->port}, Deadline::After(core::Seconds(5)));
  EXPECT_TRUE(client.ok()) << client.status().ToString();
}

}  // namespace
}  // namespace smartgen::transfer::testing
