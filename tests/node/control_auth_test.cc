// The control plane refuses callers that cannot prove the node token: unsigned calls, a wrong
// token, a replayed or stale call, on every /internal/* route of both node roles; a node will
// not listen off loopback with the built-in token; a request tied to one KV link ignores the
// messages another link sends for it.
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>

#include "node/common/control_auth.h"
#include "node/common/control_messages.h"
#include "node/decode/decode_node.h"
#include "node/prefill/prefill_node.h"
#include "control_test_util.h"
#include "node_test_util.h"

namespace smartgen::node {
namespace {

constexpr std::uint64_t kAuthModelSeed = 61;
constexpr const char* kToken = "s3cret-for-this-test";

NodeConfig AuthConfig(const std::string& name) {
  NodeConfig c = testing::SmallNodeConfig(name, kAuthModelSeed);
  c.token = kToken;
  c.warmup_tokens = 0;
  return c;
}

double AuthCounter(const std::string& metrics, const std::string& name) {
  const auto at = metrics.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(metrics.substr(at + name.size() + 2));
}

class ControlAuth : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = DecodeNode::Create(AuthConfig("decode"));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    decode_ = std::move(*d);
    ASSERT_TRUE(decode_->Start().ok());
    auto p = PrefillNode::Create(AuthConfig("prefill"));
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    prefill_ = std::move(*p);
    ASSERT_TRUE(prefill_->Start().ok());
  }
  // One call to `port` with the given headers; the HTTP status (-1: no answer).
  static int Call(int port, const std::string& method, const std::string& path, const std::string& body,
                  const httplib::Headers& headers) {
    httplib::Client cli("127.0.0.1", port);
    cli.set_read_timeout(5, 0);
    auto r = method == "GET" ? cli.Get(path, headers) : cli.Post(path, headers, body, "application/json");
    return r ? r->status : -1;
  }
  std::unique_ptr<DecodeNode> decode_;
  std::unique_ptr<PrefillNode> prefill_;
};

TEST_F(ControlAuth, EveryInternalRouteRefusesCallersWithoutTheToken) {
  const std::string cancel = RequestRef(RequestId::Random()).dump();
  const std::string prefill = testing::PrefillBody(RequestId::Random(), KvTicket::Random(),
                                                   testing::TestSpec({1, 2, 3}, 4), TransferMode::kLayerwise,
                                                   "127.0.0.1:9", 1000);
  struct Route {
    int port;
    const char* method;
    const char* path;
    std::string body;
  };
  const std::vector<Route> routes = {
      {decode_->http_port(), "POST", "/internal/decode",
       testing::DecodeBody(RequestId::Random(), {}, testing::TestSpec({1, 2}, 2), TransferMode::kColocated)},
      {decode_->http_port(), "POST", "/internal/cancel", cancel},
      {decode_->http_port(), "POST", "/internal/fallback", cancel},
      {decode_->http_port(), "GET", "/internal/info", ""},
      {prefill_->http_port(), "POST", "/internal/prefill", prefill},  // would connect anywhere
      {prefill_->http_port(), "POST", "/internal/cancel", cancel},
      {prefill_->http_port(), "GET", "/internal/info", ""},
  };
  int refused = 0;
  for (const Route& r : routes) {
    SCOPED_TRACE(r.path);
    EXPECT_EQ(Call(r.port, r.method, r.path, r.body, {}), 401) << "unsigned";
    EXPECT_EQ(Call(r.port, r.method, r.path, r.body, SignHeaders("smartgen", r.method, r.path, r.body)), 401)
        << "the built-in token";
    auto stale = SignHeaders(kToken, r.method, r.path, r.body);
    const std::int64_t then = WallMillis() - 120000;
    const std::string nonce(32, 'a');
    stale = {{kAuthTimeHeader, std::to_string(then)},
             {kAuthNonceHeader, nonce},
             {kAuthSignatureHeader, Signature(kToken, r.method, r.path, r.body, then, nonce)}};
    EXPECT_EQ(Call(r.port, r.method, r.path, r.body, stale), 401) << "two minutes old";
    // Signed for another body (or path): refused.
    EXPECT_EQ(Call(r.port, r.method, r.path, r.body, SignHeaders(kToken, r.method, r.path, r.body + " ")), 401);
    refused += 4;
  }
  // With the token: accepted (a cancel of an id not running there is 404; info answers 200),
  // once; the same headers again are a replay.
  const auto signed_cancel = SignHeaders(kToken, "POST", "/internal/cancel", cancel);
  EXPECT_EQ(Call(decode_->http_port(), "POST", "/internal/cancel", cancel, signed_cancel), 404);
  EXPECT_EQ(Call(decode_->http_port(), "POST", "/internal/cancel", cancel, signed_cancel), 401) << "replayed";
  EXPECT_EQ(Call(prefill_->http_port(), "GET", "/internal/info", "", SignHeaders(kToken, "GET", "/internal/info", "")), 200);
  refused += 1;
  const double counted = AuthCounter(decode_->MetricsText(), "smartgen_node_auth_refused_total") +
                         AuthCounter(prefill_->MetricsText(), "smartgen_node_auth_refused_total");
  EXPECT_EQ(counted, refused);
  // Health and metrics stay open (load balancers, Prometheus).
  EXPECT_EQ(Call(decode_->http_port(), "GET", "/health", "", {}), 200);
}

TEST(ControlAuthConfig, NoBuiltInTokenOffLoopback) {
  NodeConfig c = testing::SmallNodeConfig("open", kAuthModelSeed);
  c.http_host = "0.0.0.0";
  auto n = DecodeNode::Create(c);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kFailedPrecondition) << n.status().ToString();
  c.http_host = "127.0.0.1";
  c.transfer_address = "0.0.0.0:0";
  EXPECT_EQ(DecodeNode::Create(c).status().code(), StatusCode::kFailedPrecondition);
  c.token = kToken;  // with a token of its own it may
  EXPECT_TRUE(DecodeNode::Create(c).ok());
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1") && IsLoopbackHost("::1") && IsLoopbackHost("[::1]") &&
              IsLoopbackHost("localhost"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.1") || IsLoopbackHost("0.0.0.0") || IsLoopbackHost("::"));
}

TEST_F(ControlAuth, ARequestListensOnlyToTheLinkThatProvesItsTicket) {
  // Register a request (signed), as the router does, and keep its stream open.
  const RequestId id = RequestId::Random();
  const KvTicket ticket = KvTicket::Random();
  testing::HeldStream stream(decode_->http_port(),
                             testing::DecodeBody(id, ticket, testing::TestSpec({3, 4, 5, 6, 7, 8, 9, 10}, 4),
                                                 TransferMode::kLayerwise, 10000),
                             kToken, "router-a");
  for (int i = 0; i < 200 && decode_->active_requests() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(decode_->active_requests(), 1u);
  const transfer::PeerId owner{101}, intruder{202};
  auto send = [&](transfer::PeerId peer, const ControlMessage& m) {
    const auto wire = EncodeControl(m);
    decode_->HandleControlForTest(peer, static_cast<std::uint32_t>(m.type), wire);
  };
  const std::uint64_t h = id.link_handle();
  const double before = AuthCounter(decode_->MetricsText(), "smartgen_decode_control_rejected_total");
  // Speaking first wins nothing: a PrefillStarted without the ticket (or with the handle but
  // not the whole id) binds nothing, and nothing else binds at all.
  send(intruder, ControlMessage::PrefillStarted(id, KvTicket::Random()));
  send(intruder, ControlMessage::PrefillStarted(RequestId{id.hi ^ 1, id.lo}, ticket));
  send(intruder, ControlMessage::PrefillDone(h, 5, 8));
  EXPECT_EQ(AuthCounter(decode_->MetricsText(), "smartgen_decode_control_rejected_total"), before + 3);
  send(owner, ControlMessage::PrefillStarted(id, ticket));
  send(intruder, ControlMessage::PrefillStarted(id, ticket));  // the ticket, but the request is bound
  send(intruder, ControlMessage::PrefillDone(h, 5, 8));    // someone else's token 1
  send(intruder, ControlMessage::PrefillFailed(h, Internal("forced fallback")));
  EXPECT_EQ(AuthCounter(decode_->MetricsText(), "smartgen_decode_control_rejected_total"), before + 6);
  // The owner's link failing ends the wait: the request computes its prompt here and finishes.
  send(owner, ControlMessage::PrefillFailed(h, Unavailable("owner failed")));
  stream.Join();
  EXPECT_EQ(stream.Last().value("event", ""), "done");
  for (int i = 0; i < 200 && decode_->active_requests() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(decode_->active_requests(), 0u);
  EXPECT_NE(decode_->MetricsText().find("smartgen_decode_fallbacks_total 1"), std::string::npos);
}

}  // namespace
}  // namespace smartgen::node
