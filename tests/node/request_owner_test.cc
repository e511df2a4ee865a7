// Request ids are random 128-bit values bound to the router that registered them (issue 11):
// a cancel (or a fallback) signed with the token by any other caller is refused with 403, a
// warning and smartgen_node_call_refused_total, on the decode and the prefill node; a guessed
// id finds nothing (404); the registering router's cancel works.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "control_test_util.h"
#include "node/decode/decode_node.h"
#include "node/prefill/prefill_node.h"
#include "node_test_util.h"

namespace smartgen::node {
namespace {

constexpr std::uint64_t kOwnerModelSeed = 73;
constexpr const char* kOwnerToken = "request-owner-test-token";

NodeConfig OwnerConfig(const std::string& name) {
  NodeConfig c = testing::SmallNodeConfig(name, kOwnerModelSeed);
  c.token = kOwnerToken;
  c.warmup_tokens = 0;
  return c;
}

TEST(RequestIds, AreRandom128BitHexAndParsedStrictly) {
  const RequestId a = RequestId::Random(), b = RequestId::Random();
  EXPECT_NE(a, b);
  EXPECT_TRUE(a.valid());
  EXPECT_EQ(a.ToHex().size(), 32u);
  auto back = ParseId128(a.ToHex(), "id");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, a);
  EXPECT_EQ(ParseId128("0123456789ABCDEF0123456789abcdef", "id")->hi, 0x0123456789abcdefull);
  for (const char* bad :
       {"", "12", "0123456789abcdef0123456789abcdeg", "0123456789abcdef0123456789abcdef0",
        "ffffffffffffffff0000000000000000"}) {
    EXPECT_EQ(ParseId128(bad, "id").status().code(), StatusCode::kInvalidArgument) << bad;
  }
  // A number (the old 64-bit form) is refused with the field named.
  auto old = ParseRequestRef(nlohmann::json{{"request_id", 7}}, "cancel");
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("request_id"), std::string::npos)
      << old.status().ToString();
}

TEST(RequestOwner, OnlyTheRegisteringRouterMayCancelAtTheDecodeNode) {
  auto d = DecodeNode::Create(OwnerConfig("decode"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  DecodeNode& decode = **d;
  ASSERT_TRUE(decode.Start().ok());
  const RequestId id = RequestId::Random();
  // Registered, waiting for a prefill that does not come (30 s): it stays until cancelled.
  testing::HeldStream stream(
      decode.http_port(),
      testing::DecodeBody(id, KvTicket::Random(), testing::TestSpec({3, 4, 5, 6}, 4),
                          TransferMode::kLayerwise),
      kOwnerToken, "router-a");
  for (int i = 0; i < 500 && decode.active_requests() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(decode.active_requests(), 1u);
  const int port = decode.http_port();
  testing::CapturedLog captured;
  EXPECT_EQ(
      testing::SignedPost(port, "/internal/cancel", RequestRef(id).dump(), kOwnerToken, "router-b"),
      403);
  EXPECT_EQ(testing::SignedPost(port, "/internal/fallback", RequestRef(id).dump(), kOwnerToken,
                                "router-b"),
            403);
  EXPECT_EQ(testing::SignedPost(port, "/internal/cancel", RequestRef(id).dump(), kOwnerToken, ""),
            403);
  const std::string log = captured.Take();
  EXPECT_NE(log.find("refused /internal/cancel for request " + id.ToHex() + " from 'router-b'"),
            std::string::npos)
      << log;
  EXPECT_EQ(testing::CounterValue(decode.MetricsText(), "smartgen_node_call_refused_total"), 3);
  // Guessed ids: a fresh random one, and one with the right low half (the KV handle) only.
  EXPECT_EQ(testing::SignedPost(port, "/internal/cancel", RequestRef(RequestId::Random()).dump(),
                                kOwnerToken, "router-a"),
            404);
  EXPECT_EQ(
      testing::SignedPost(port, "/internal/cancel", RequestRef(RequestId{id.hi ^ 1, id.lo}).dump(),
                          kOwnerToken, "router-a"),
      404);
  EXPECT_EQ(decode.active_requests(), 1u) << "nothing was cancelled";
  // The owner's cancel ends it, reported as cancelled (not as a normal completion).
  EXPECT_EQ(
      testing::SignedPost(port, "/internal/cancel", RequestRef(id).dump(), kOwnerToken, "router-a"),
      200);
  stream.Join();
  EXPECT_EQ(stream.Last().value("finish_reason", ""), "cancelled") << stream.Last().dump();
  EXPECT_EQ(decode.active_requests(), 0u);
}

// A TCP listener that never answers the KV handshake: a prefill call naming it stays in flight
// (connecting) until its timeout.
class SilentListener {
 public:
  SilentListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 ||
        ::listen(fd_, 4) != 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ADD_FAILURE() << "cannot listen on loopback";
    }
    port_ = ntohs(a.sin_port);
  }
  ~SilentListener() {
    if (fd_ >= 0) ::close(fd_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(RequestOwner, OnlyTheRegisteringRouterMayCancelAtThePrefillNode) {
  auto p = PrefillNode::Create(OwnerConfig("prefill"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  PrefillNode& prefill = **p;
  ASSERT_TRUE(prefill.Start().ok());
  SilentListener silent;
  const RequestId id = RequestId::Random();
  const int port = prefill.http_port();
  std::thread call([&] {
    testing::SignedPost(
        port, "/internal/prefill",
        testing::PrefillBody(id, KvTicket::Random(), testing::TestSpec({3, 4, 5, 6}, 4),
                             TransferMode::kLayerwise, silent.address(), 3000),
        kOwnerToken, "router-a");
  });
  // Known once the call is in: until then a cancel finds nothing (404).
  int status = 404;
  for (int i = 0; i < 200 && status == 404; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    status = testing::SignedPost(port, "/internal/cancel", RequestRef(id).dump(), kOwnerToken,
                                 "router-b");
  }
  EXPECT_EQ(status, 403);
  EXPECT_EQ(testing::CounterValue(prefill.MetricsText(), "smartgen_node_call_refused_total"), 1);
  EXPECT_EQ(testing::SignedPost(port, "/internal/cancel", RequestRef(RequestId::Random()).dump(),
                                kOwnerToken, "router-a"),
            404);
  EXPECT_EQ(
      testing::SignedPost(port, "/internal/cancel", RequestRef(id).dump(), kOwnerToken, "router-a"),
      200);
  call.join();
}

}  // namespace
}  // namespace smartgen::node
