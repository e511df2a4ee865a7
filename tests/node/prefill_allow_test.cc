// A prefill node sends KV only to the decode nodes it is configured with (--allow-decode, issue
// 11): a signed /internal/prefill naming any other address - another pool's decode node, or a
// host and port to probe - is refused with 403, a warning and
// smartgen_prefill_decode_refused_total, before any connection is made; one naming an allowed
// decode node is served.
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>

#include "node/common/control_auth.h"
#include "node/decode/decode_node.h"
#include "node/prefill/prefill_node.h"
#include "control_test_util.h"
#include "node_test_util.h"

namespace smartgen::node {
namespace {

constexpr std::uint64_t kAllowModelSeed = 67;
constexpr const char* kAllowToken = "allow-list-test-token";

NodeConfig AllowConfig(const std::string& name) {
  NodeConfig c = testing::SmallNodeConfig(name, kAllowModelSeed);
  c.token = kAllowToken;
  c.warmup_tokens = 0;
  return c;
}

double AllowCounter(const std::string& metrics, const std::string& name) {
  const auto at = metrics.find("\n" + name + " ");
  return at == std::string::npos ? 0 : std::stod(metrics.substr(at + name.size() + 2));
}

const KvTicket kAllowTicket{0x5eed, 0x7e11};

// A signed POST /internal/prefill of request `id` naming `decode_address`; the HTTP status.
int SignedPrefill(int port, std::uint64_t id, const std::string& decode_address) {
  const std::string body = testing::PrefillBody(RequestId{0, id}, kAllowTicket,
                                                testing::TestSpec({3, 4, 5, 6, 7, 8, 9, 10}, 4),
                                                TransferMode::kLayerwise, decode_address, 10000);
  return testing::SignedPost(port, "/internal/prefill", body, kAllowToken);
}

TEST(PrefillAllowDecode, RefusesAddressesOutsideItsDecodeNodesWith403) {
  auto d = DecodeNode::Create(AllowConfig("decode"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_TRUE((*d)->Start().ok());
  NodeConfig pc = AllowConfig("prefill-other-pool");
  pc.allowed_decode = {"127.0.0.9:9201", "[fd00::3]"};
  auto p = PrefillNode::Create(pc);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE((*p)->Start().ok());
  // A real decode node, but not one of this node's; and a port to probe.
  EXPECT_EQ(SignedPrefill((*p)->http_port(), 41, (*d)->transfer_address()), 403);
  EXPECT_EQ(SignedPrefill((*p)->http_port(), 42, "127.0.0.1:22"), 403);
  EXPECT_EQ(AllowCounter((*p)->MetricsText(), "smartgen_prefill_decode_refused_total"), 2);
  // Refused before connecting: the decode node saw no KV peer.
  EXPECT_EQ(AllowCounter((*d)->MetricsText(), "smartgen_transfer_peers_connected"), 0);
}

TEST(PrefillAllowDecode, ServesAnAllowedDecodeNode) {
  auto d = DecodeNode::Create(AllowConfig("decode"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  DecodeNode& decode = **d;
  ASSERT_TRUE(decode.Start().ok());
  NodeConfig pc = AllowConfig("prefill");
  pc.allowed_decode = {"10.0.0.3", "127.0.0.1"};  // a host alone: any port
  auto p = PrefillNode::Create(pc);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE((*p)->Start().ok());
  // Register the request at the decode node as the router does, and keep its stream open.
  testing::HeldStream stream(decode.http_port(),
                             testing::DecodeBody(RequestId{0, 43}, kAllowTicket,
                                                 testing::TestSpec({3, 4, 5, 6, 7, 8, 9, 10}, 4),
                                                 TransferMode::kLayerwise, 10000),
                             kAllowToken, "");
  for (int i = 0; i < 200 && decode.active_requests() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(decode.active_requests(), 1u);
  EXPECT_EQ(SignedPrefill((*p)->http_port(), 43, decode.transfer_address()), 200);
  stream.Join();
  EXPECT_EQ(stream.Last().value("event", ""), "done");
  EXPECT_EQ(AllowCounter((*p)->MetricsText(), "smartgen_prefill_decode_refused_total"), 0);
}

}  // namespace
}  // namespace smartgen::node
