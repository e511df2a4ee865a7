// KV is bound to the link the router assigned (issue 11): a prefill node holding the right
// token, but not given the request's KV ticket, cannot start the request, send its token 1 or
// land a single block in its KV - before the assigned prefill node has spoken or after. Each
// refusal is counted and logged, and the victim's tokens are those of colocated decoding.
#include <gtest/gtest.h>

#include <thread>

#include "control_test_util.h"
#include "node/decode/decode_node.h"
#include "node/prefill/prefill_node.h"
#include "node_test_util.h"

namespace smartgen::node {
namespace {

constexpr std::uint64_t kBindModelSeed = 71;
constexpr const char* kBindToken = "kv-binding-test-token";

NodeConfig BindConfig(const std::string& name) {
  NodeConfig c = testing::SmallNodeConfig(name, kBindModelSeed);
  c.token = kBindToken;
  c.warmup_tokens = 0;
  return c;
}

class KvBinding : public ::testing::Test {
 protected:
  void SetUp() override {
    for (auto [slot, name] :
         {std::pair{&prefill_, "prefill"}, std::pair{&attacker_, "prefill-attacker"}}) {
      auto p = PrefillNode::Create(BindConfig(name));
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      *slot = std::move(*p);
      ASSERT_TRUE((*slot)->Start().ok());
    }
    auto d = DecodeNode::Create(BindConfig("decode"));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    decode_ = std::move(*d);
    ASSERT_TRUE(decode_->Start().ok());
  }
  int Prefill(PrefillNode& p, const RequestId& id, const KvTicket& ticket,
              const GenerationSpec& spec, TransferMode mode) {
    return testing::SignedPost(
        p.http_port(), "/internal/prefill",
        testing::PrefillBody(id, ticket, spec, mode, decode_->transfer_address()), kBindToken,
        "router");
  }
  std::unique_ptr<PrefillNode> prefill_, attacker_;
  std::unique_ptr<DecodeNode> decode_;
};

const std::vector<std::int32_t> kVictimPrompt = {5, 9, 2, 7, 7, 1, 3, 8, 6, 4, 2, 2,
                                                 9, 1, 5, 3, 8, 8, 1, 4, 6, 2, 7, 3,
                                                 9, 5, 1, 6, 4, 8, 2, 7, 3, 3, 5};
const std::vector<std::int32_t> kAttackPrompt = {
    200, 201, 202, 203, 204, 205, 206, 207, 208, 209, 210, 211, 212, 213, 214, 215, 216, 217,
    218, 219, 220, 221, 222, 223, 224, 225, 226, 227, 228, 229, 230, 231, 232, 233, 234};

TEST_F(KvBinding, APrefillNodeWithTheTokenButNotTheTicketCannotInjectKvBeforeTheAssignedOne) {
  const int max_tokens = 12;
  const auto reference =
      testing::ReferenceTokens(BindConfig("x").model_path, kVictimPrompt, max_tokens);
  for (TransferMode mode : {TransferMode::kLayerwise, TransferMode::kFull}) {
    SCOPED_TRACE(TransferModeName(mode));
    // The previous iteration's request may still be leaving the registry: wait, so that the
    // count of 1 below is this victim (else the attacker's PrefillStarted can arrive before the
    // victim is registered, and is dropped as a message for an unknown request).
    ASSERT_TRUE(testing::WaitUntil([&] { return decode_->active_requests() == 0; }, core::Seconds(5)));
    const RequestId id = RequestId::Random();
    const KvTicket ticket = KvTicket::Random();
    const double refused_before =
        testing::CounterValue(decode_->MetricsText(), "smartgen_decode_kv_refused_total");
    testing::CapturedLog captured;
    testing::HeldStream victim(
        decode_->http_port(),
        testing::DecodeBody(id, ticket, testing::TestSpec(kVictimPrompt, max_tokens), mode),
        kBindToken, "router");
    ASSERT_TRUE(testing::WaitUntil([&] { return decode_->active_requests() == 1; }, core::Seconds(5)));
    // The attacker names the victim's id and the decode node's KV address, with its own prompt
    // and a ticket of its own: its PrefillStarted, token 1 and every block are refused.
    Prefill(*attacker_, id, KvTicket::Random(), testing::TestSpec(kAttackPrompt, max_tokens), mode);
    EXPECT_TRUE(testing::WaitUntil(
        [&] {
          return testing::CounterValue(decode_->MetricsText(), "smartgen_decode_kv_refused_total") >
                 refused_before;
        },
        core::Seconds(10)))
        << decode_->MetricsText();
    // The assigned prefill node, with the ticket, is served.
    EXPECT_EQ(Prefill(*prefill_, id, ticket, testing::TestSpec(kVictimPrompt, max_tokens), mode),
              200);
    victim.Join();
    const std::string log = captured.Take();
    EXPECT_NE(log.find("refused KV for request " + std::to_string(id.link_handle())),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("prefill_started without the request's KV ticket"), std::string::npos)
        << log;
    const nlohmann::json last = victim.Last();
    ASSERT_EQ(last.value("event", ""), "done") << last.dump();
    EXPECT_FALSE(last["stats"].value("fallback", true))
        << "the KV came over the link, not recomputed";
    EXPECT_EQ(victim.Tokens(), reference);
  }
  EXPECT_GE(testing::CounterValue(decode_->MetricsText(), "smartgen_decode_control_rejected_total"), 4);
  EXPECT_TRUE(testing::WaitUntil([&] { return decode_->active_requests() == 0; }, core::Seconds(5)));
}

TEST_F(KvBinding, AfterTheAssignedLinkIsBoundEveryOtherLinksBlocksAreRefusedAtTheSink) {
  // The assigned node's link is slow: its blocks are still crossing
  // when the attacker pushes.
  NodeConfig slow = BindConfig("prefill-slow");
  slow.link_gbps = 0.001;  // 192 KiB of KV: about 1.5 s, past any prefill time here
  auto p = PrefillNode::Create(slow);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE((*p)->Start().ok());
  const int max_tokens = 24;
  const auto reference =
      testing::ReferenceTokens(BindConfig("x").model_path, kVictimPrompt, max_tokens);
  const RequestId id = RequestId::Random();
  const KvTicket ticket = KvTicket::Random();
  testing::HeldStream victim(
      decode_->http_port(),
      testing::DecodeBody(id, ticket, testing::TestSpec(kVictimPrompt, max_tokens),
                          TransferMode::kLayerwise),
      kBindToken, "router");
  ASSERT_TRUE(testing::WaitUntil([&] { return decode_->active_requests() == 1; }, core::Seconds(5)));
  EXPECT_EQ(Prefill(**p, id, ticket, testing::TestSpec(kVictimPrompt, max_tokens),
                    TransferMode::kLayerwise),
            200);
  ASSERT_EQ(decode_->active_requests(), 1u) << "the victim is still waiting for its KV";
  // Even with the ticket (a leaked one), a second link cannot take over a bound request.
  Prefill(*attacker_, id, ticket, testing::TestSpec(kAttackPrompt, max_tokens),
          TransferMode::kLayerwise);
  victim.Join();
  EXPECT_GT(testing::CounterValue(decode_->MetricsText(), "smartgen_decode_kv_refused_total"), 0);
  const nlohmann::json last = victim.Last();
  ASSERT_EQ(last.value("event", ""), "done") << last.dump();
  EXPECT_EQ(victim.Tokens(), reference);
}

}  // namespace
}  // namespace smartgen::node
