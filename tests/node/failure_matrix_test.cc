// The hung-peer and lost-link matrix, in one process over loopback TCP: the prefill node's
// side of the KV link goes through the fault transport, which cuts the link at points before
// and after PrefillDone, goes silent (every frame dropped: a peer alive but hung), or
// duplicates frames. Every request must end with the single-process tokens within its phase
// deadlines (far below the request deadline), and leave no request, KV block or lease behind.
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/clock.h"
#include "node/decode/decode_node.h"
#include "node/prefill/prefill_node.h"
#include "node/router/router.h"
#include "node_test_util.h"
#include "transfer/fault/fault_transport.h"
#include "transfer/transport_factory.h"

namespace smartgen::node {
namespace {

constexpr std::uint64_t kMatrixModelSeed = 31;

NodeConfig MatrixConfig(const std::string& name) {
  NodeConfig c = testing::SmallNodeConfig(name, kMatrixModelSeed);
  c.heartbeat_timeout_s = 0.5;   // a silent peer is dead after half a second
  c.kv_progress_timeout_s = 3;
  c.step_timeout_s = 2;
  c.warmup_tokens = 0;
  return c;
}

// The value of an unlabelled gauge in Prometheus text (-1 when absent).
double MatrixGauge(const std::string& text, const std::string& name) {
  const std::string key = "\n" + name + " ";
  const auto at = ("\n" + text).find(key);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + key.size() - 1));
}

bool MatrixWaitFor(const std::function<bool()>& done, core::Nanos limit) {
  const core::Deadline d = core::Deadline::After(limit);
  while (!done()) {
    if (d.Expired()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::vector<std::int32_t> MatrixPrompt(int n) {
  std::vector<std::int32_t> p(n);
  for (int i = 0; i < n; ++i) p[i] = 5 + (i * 37) % 240;
  return p;
}

struct Case {
  const char* name;
  transfer::FaultPlan plan;
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  // A 400-token prompt's KV is 1.6 MB here: cuts before any block, mid-prefill, and late (after
  // PrefillDone in layerwise, whose last layer is still on the link when it is sent).
  for (std::uint64_t at : {1000ull, 300000ull, 1000000ull, 1550000ull}) {
    transfer::FaultPlan p;
    p.disconnect_after_bytes = at;
    cases.push_back({"cut", p});
  }
  // Alive but silent: every frame after the first few is dropped (heartbeats too).
  for (std::uint64_t skip : {3ull, 40ull, 120ull}) {
    transfer::FaultPlan p;
    p.skip_frames = skip;
    p.drop_probability = 1.0;
    cases.push_back({"silent", p});
  }
  transfer::FaultPlan dup;
  dup.duplicate_probability = 0.3;
  dup.seed = 5;
  cases.push_back({"duplicate", dup});
  return cases;
}

TEST(FailureMatrix, EveryRequestEndsCorrectlyAndLeavesNothingBehind) {
  const auto prompt = MatrixPrompt(400);
  const auto want = testing::ReferenceTokens(testing::SmallModelPath(kMatrixModelSeed), prompt, 8);
  auto decode = DecodeNode::Create(MatrixConfig("decode"));
  ASSERT_TRUE(decode.ok()) << decode.status().ToString();
  ASSERT_TRUE((*decode)->Start().ok());
  int index = 0;
  for (const Case& c : Cases()) {
    for (const char* mode : {"layerwise", "smartgen"}) {
      SCOPED_TRACE(fmt::format("{} #{} ({})", c.name, index, mode));
      auto tcp = transfer::MakeTransport("tcp");
      ASSERT_TRUE(tcp.ok());
      auto fault = std::make_shared<transfer::FaultTransport>(*tcp, c.plan);
      auto prefill = PrefillNode::Create(MatrixConfig("prefill"), fault);
      ASSERT_TRUE(prefill.ok()) << prefill.status().ToString();
      ASSERT_TRUE((*prefill)->Start().ok());
      RouterConfig rc;
      rc.model_path = testing::SmallModelPath(kMatrixModelSeed);
      rc.prefill_nodes = {"127.0.0.1:" + std::to_string((*prefill)->http_port())};
      rc.decode_nodes = {"127.0.0.1:" + std::to_string((*decode)->http_port())};
      auto router = Router::Create(rc);
      ASSERT_TRUE(router.ok()) << router.status().ToString();

      RouteRequest rq = testing::TestRequest(mode, prompt, 8);
      rq.spec.options = {{"proactive_ratio", 4.0}};
      std::vector<std::int32_t> got;
      const core::Stopwatch watch;
      auto r = testing::GenerateTokens(**router, rq, &got);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(got, want) << r->stats.dump();
      // Detection is bounded by the heartbeat and phase deadlines, not the 60 s request one.
      EXPECT_LT(watch.ElapsedSeconds(), 20.0) << r->stats.dump();
      // Nothing is held afterwards, on either node.
      EXPECT_TRUE(MatrixWaitFor([&] { return (*decode)->active_requests() == 0; }, core::Seconds(10)));
      EXPECT_TRUE(MatrixWaitFor([&] { return MatrixGauge((*decode)->MetricsText(), "smartgen_decode_kv_blocks_used") == 0; },
                          core::Seconds(10)))
          << (*decode)->MetricsText();
      EXPECT_TRUE(MatrixWaitFor([&] { return MatrixGauge((*prefill)->MetricsText(), "smartgen_prefill_kv_blocks_used") == 0; },
                          core::Seconds(10)))
          << (*prefill)->MetricsText();
      router->reset();
      (*prefill)->Stop();
      ++index;
    }
  }
}

TEST(FailureMatrix, MalformedControlMessagesAreRejectedCountedAndTheNodeKeepsServing) {
  auto decode = DecodeNode::Create(MatrixConfig("decode"));
  ASSERT_TRUE(decode.ok());
  ASSERT_TRUE((*decode)->Start().ok());
  auto prefill = PrefillNode::Create(MatrixConfig("prefill"));
  ASSERT_TRUE(prefill.ok());
  ASSERT_TRUE((*prefill)->Start().ok());
  const transfer::PeerId peer{77};
  std::vector<std::pair<std::uint32_t, std::vector<std::byte>>> bad;
  auto wire = [](const ControlMessage& m) { return EncodeControl(m); };
  bad.push_back({99, wire(ControlMessage::PrefillStarted(RequestId{0, 1}, KvTicket{0, 1}))});                     // unknown type
  bad.push_back({0, {}});                                                            // empty
  for (std::uint32_t t = 1; t <= 6; ++t) bad.push_back({t, {std::byte{1}, std::byte{2}}});  // truncated
  bad.push_back({1, wire(ControlMessage::PrefillDone(1, -1, 5))});                   // bad token
  std::vector<std::byte> huge = wire(ControlMessage::Requested(1, {}));
  const std::uint32_t n = 0x7fffffff;
  std::memcpy(huge.data() + 8, &n, 4);
  bad.push_back({5, huge});                                                          // huge count
  bad.push_back({5, wire(ControlMessage::Requested(1, {{0, 0, 0}}))});               // wrong direction
  for (auto& [type, bytes] : bad) (*decode)->HandleControlForTest(peer, type, bytes);
  const std::string m = (*decode)->MetricsText();
  EXPECT_NE(m.find(fmt::format("smartgen_decode_control_rejected_total {}", bad.size())), std::string::npos) << m;
  // The prefill node accepts only kRequested, and only well-formed.
  for (auto& [type, bytes] : bad) {
    if (type != 5 || bytes.size() == huge.size()) (*prefill)->HandleControlForTest(peer, type, bytes);
  }
  EXPECT_NE((*prefill)->MetricsText().find("smartgen_prefill_control_rejected_total"), std::string::npos);
  EXPECT_EQ((*prefill)->MetricsText().find("smartgen_prefill_control_rejected_total 0\n"), std::string::npos);

  // Both keep serving.
  RouterConfig rc;
  rc.model_path = testing::SmallModelPath(kMatrixModelSeed);
  rc.prefill_nodes = {"127.0.0.1:" + std::to_string((*prefill)->http_port())};
  rc.decode_nodes = {"127.0.0.1:" + std::to_string((*decode)->http_port())};
  auto router = Router::Create(rc);
  ASSERT_TRUE(router.ok());
  const auto prompt = MatrixPrompt(60);
  std::vector<std::int32_t> got;
  auto r = testing::GenerateTokens(**router, testing::TestRequest("layerwise", prompt, 6), &got);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(got, testing::ReferenceTokens(testing::SmallModelPath(kMatrixModelSeed), prompt, 6));
  EXPECT_FALSE(r->stats.value("fallback", true));
}

TEST(FailureMatrix, AClientThatLeavesWhileNothingIsWrittenEndsTheRequestOnTheNodes) {
  // The KV of a 500-token prompt takes about 4 s on this 4 Mbit/s link: no token is due for
  // seconds. The client goes away after 0.3 s; the decode stream's keep-alive lines let the
  // router notice within about a second and cancel on both nodes.
  NodeConfig pc = MatrixConfig("prefill");
  pc.link_gbps = 0.004;
  auto prefill = PrefillNode::Create(pc);
  ASSERT_TRUE(prefill.ok());
  ASSERT_TRUE((*prefill)->Start().ok());
  auto decode = DecodeNode::Create(MatrixConfig("decode"));
  ASSERT_TRUE(decode.ok());
  ASSERT_TRUE((*decode)->Start().ok());
  RouterConfig rc;
  rc.model_path = testing::SmallModelPath(kMatrixModelSeed);
  rc.prefill_nodes = {"127.0.0.1:" + std::to_string((*prefill)->http_port())};
  rc.decode_nodes = {"127.0.0.1:" + std::to_string((*decode)->http_port())};
  auto router = Router::Create(rc);
  ASSERT_TRUE(router.ok());
  RouteRequest rq = testing::TestRequest("layerwise", MatrixPrompt(500), 8);
  const core::Stopwatch watch;
  rq.cancelled = [&] { return watch.ElapsedSeconds() > 0.3; };
  std::vector<std::int32_t> got;
  auto r = testing::GenerateTokens(**router, rq, &got);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->finish_reason, "cancelled");
  EXPECT_LT(watch.ElapsedSeconds(), 3.0) << "the KV alone takes about 4 s";
  EXPECT_TRUE(MatrixWaitFor([&] { return (*decode)->active_requests() == 0; }, core::Seconds(2)));
  EXPECT_TRUE(MatrixWaitFor(
      [&] { return MatrixGauge((*prefill)->MetricsText(), "smartgen_prefill_kv_blocks_used") == 0; },
      core::Seconds(10)));
}

}  // namespace
}  // namespace smartgen::node
