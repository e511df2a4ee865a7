// The versioned handshake: compatible peers connect; any mismatch is refused on both sides
// with an error that names it.
#include "transfer/handshake.h"

#include <gtest/gtest.h>

#include <thread>

#include "transfer/loopback/loopback_connection.h"
#include "transfer/loopback/loopback_transport.h"
#include "transfer_test_util.h"

namespace smartgen::transfer::testing {
namespace {

struct Outcome {
  Status connect;
  std::uint64_t refused = 0;
  bool accepted = false;
};

Outcome TryConnect(EndpointConfig server, EndpointConfig client) {
  auto transport = std::make_shared<LoopbackTransport>();
  auto a = Endpoint::Create(std::move(server), transport, nullptr, nullptr);
  auto b = Endpoint::Create(std::move(client), transport, nullptr, nullptr);
  EXPECT_TRUE(a.ok() && b.ok());
  auto address = (*a)->Listen("");
  EXPECT_TRUE(address.ok());
  Outcome out;
  out.connect = (*b)->Connect(*address, Deadline::After(core::Seconds(5))).status();
  const Deadline d = Deadline::After(core::Seconds(2));
  while (!d.Expired() && (*a)->GetMetrics().handshakes_refused == 0 && !out.connect.ok()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  out.refused = (*a)->GetMetrics().handshakes_refused;
  out.accepted = (*a)->Accept(Deadline::After(core::Millis(50))).ok();
  return out;
}

TEST(Handshake, CompatiblePeersConnect) {
  const Outcome o = TryConnect(TestConfig("a"), TestConfig("b"));
  EXPECT_TRUE(o.connect.ok()) << o.connect.ToString();
  EXPECT_TRUE(o.accepted);
  EXPECT_EQ(o.refused, 0u);
}

TEST(Handshake, ModelMismatchIsRefusedOnBothSides) {
  EndpointConfig other = TestConfig("b");
  other.handshake.model_hash = 1234;
  const Outcome o = TryConnect(TestConfig("a"), other);
  EXPECT_EQ(o.connect.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(o.connect.message().find("model_hash"), std::string_view::npos) << o.connect.ToString();
  EXPECT_EQ(o.refused, 1u);
  EXPECT_FALSE(o.accepted);
}

TEST(Handshake, GeometryMismatchNamesEveryField) {
  EndpointConfig other = TestConfig("b");
  other.handshake.geometry.block_tokens = 32;
  other.handshake.geometry.dtype = KvDType::kF32;
  const Outcome o = TryConnect(TestConfig("a"), other);
  EXPECT_EQ(o.connect.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(o.connect.message().find("block_tokens 16 vs peer 32"), std::string_view::npos)
      << o.connect.ToString();
  EXPECT_NE(o.connect.message().find("dtype"), std::string_view::npos);
  EXPECT_FALSE(o.accepted);
}

TEST(Handshake, WrongTokenIsPermissionDenied) {
  EndpointConfig other = TestConfig("b");
  other.token = "not-the-token";
  const Outcome o = TryConnect(TestConfig("a"), other);
  EXPECT_EQ(o.connect.code(), StatusCode::kPermissionDenied) << o.connect.ToString();
  EXPECT_NE(o.connect.message().find("wrong token"), std::string_view::npos);
  EXPECT_EQ(o.refused, 1u);
  EXPECT_FALSE(o.accepted);
}

TEST(Handshake, ProtocolVersionMismatchIsRefused) {
  auto [client, server] = LoopbackConnection::MakePair(1 << 16, "v");
  Status server_status;
  std::thread t([&, s = server.get()] {
    server_status = RunHandshake(*s, HandshakeRole::kAcceptor, TestHandshake(), "t",
                                 Deadline::After(core::Seconds(5)));
  });
  const Status st = RunHandshake(*client, HandshakeRole::kConnector, TestHandshake(), "t",
                                 Deadline::After(core::Seconds(5)), kProtocolVersion + 1);
  t.join();
  EXPECT_EQ(server_status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(server_status.message().find("protocol version"), std::string_view::npos);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("protocol version"), std::string_view::npos);
}

TEST(Handshake, SilentOrForeignPeersTimeOutOrFail) {
  auto [client, server] = LoopbackConnection::MakePair(1 << 16, "x");
  core::Stopwatch watch;
  // Nobody answers: the deadline ends it.
  EXPECT_EQ(RunHandshake(*client, HandshakeRole::kConnector, TestHandshake(), "t",
                         Deadline::After(core::Millis(100)))
                .code(),
            StatusCode::kDeadlineExceeded);
  EXPECT_LT(watch.ElapsedSeconds(), 2.0);
  // Garbage instead of a HELLO: a clear data-loss error, not a hang.
  EncodedHeader junk{};
  junk.fill(std::byte{0x42});
  ASSERT_TRUE(client->Send(junk, {}, Deadline::After(core::Seconds(1))).ok());
  EXPECT_EQ(RunHandshake(*server, HandshakeRole::kAcceptor, TestHandshake(), "t",
                         Deadline::After(core::Seconds(1)))
                .code(),
            StatusCode::kDataLoss);
}

TEST(Handshake, CheckCompatibleListsDifferences) {
  HandshakeParams a = TestHandshake(), b = TestHandshake();
  EXPECT_TRUE(CheckCompatible(a, kProtocolVersion, b).ok());
  b.geometry.n_layers = 5;
  b.geometry.head_dim = 128;
  const Status st = CheckCompatible(a, kProtocolVersion, b);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("n_layers 4 vs peer 5"), std::string_view::npos);
  EXPECT_NE(st.message().find("head_dim 64 vs peer 128"), std::string_view::npos);
}

}  // namespace
}  // namespace smartgen::transfer::testing
