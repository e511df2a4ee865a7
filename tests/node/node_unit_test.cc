// The node plane's plain-data parts, without threads or sockets: the decode request's state
// machine (driven with explicit times), the KV-link control-message codec (every malformed
// kind), the decode stream's token events and the sampling codec, and the router's ordered
// delivery.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "node/common/control_messages.h"
#include "node/common/generation_spec.h"
#include "node/common/protocol.h"
#include "node/decode/decode_kv_store.h"
#include "node/decode/request_state.h"
#include "node/router/ordered_delivery.h"

namespace smartgen::node {
namespace {

using S = DecodeState;

TEST(RequestState, FollowsTheDiagramAndNothingElse) {
  EXPECT_TRUE(IsLegalTransition(S::kRegistered, S::kAwaitingKv));
  EXPECT_TRUE(IsLegalTransition(S::kRegistered, S::kFallback));
  EXPECT_TRUE(IsLegalTransition(S::kAwaitingKv, S::kRunning));
  EXPECT_TRUE(IsLegalTransition(S::kAwaitingKv, S::kExact));
  EXPECT_TRUE(IsLegalTransition(S::kRunning, S::kExact));
  EXPECT_TRUE(IsLegalTransition(S::kExact, S::kDone));
  EXPECT_TRUE(IsLegalTransition(S::kFallback, S::kCancelled));
  EXPECT_FALSE(IsLegalTransition(S::kRunning, S::kFallback));  // mid-decode: recompute instead
  EXPECT_FALSE(IsLegalTransition(S::kExact, S::kRunning));
  EXPECT_FALSE(IsLegalTransition(S::kFallback, S::kRunning));
  for (S terminal : {S::kDone, S::kCancelled, S::kFailed}) {
    for (int to = 0; to < kDecodeStateCount; ++to) {
      EXPECT_FALSE(IsLegalTransition(terminal, static_cast<S>(to))) << DecodeStateName(terminal);
    }
  }
  RequestState st({}, 0);
  EXPECT_FALSE(st.Transition(S::kExact, 1));  // not from registered
  EXPECT_EQ(st.state(), S::kRegistered);
  EXPECT_TRUE(st.Transition(S::kAwaitingKv, 2));
  EXPECT_TRUE(st.Transition(S::kRunning, 3));
  EXPECT_TRUE(st.Transition(S::kExact, 4));
  EXPECT_TRUE(st.Transition(S::kDone, 5));
  EXPECT_FALSE(st.Transition(S::kFailed, 6));
  EXPECT_EQ(st.state(), S::kDone);
}

TEST(RequestState, EachWaitingStateOwnsItsDeadline) {
  RequestDeadlines d;
  d.prefill_start = core::Seconds(30);
  d.kv_progress = core::Seconds(10);
  const core::Nanos t0 = core::Seconds(100);
  RequestState st(d, t0);
  EXPECT_EQ(st.deadline(), t0 + core::Seconds(30));
  EXPECT_FALSE(st.Expired(t0 + core::Seconds(29)));
  EXPECT_TRUE(st.Expired(t0 + core::Seconds(30)));
  // Awaiting KV: the deadline is silence, renewed by every sign of progress.
  ASSERT_TRUE(st.Transition(S::kAwaitingKv, t0 + core::Seconds(1)));
  EXPECT_EQ(st.deadline(), t0 + core::Seconds(11));
  st.Progress(t0 + core::Seconds(8));
  EXPECT_FALSE(st.Expired(t0 + core::Seconds(17)));
  EXPECT_TRUE(st.Expired(t0 + core::Seconds(18)));
  st.Progress(t0 + core::Seconds(2));  // an older sign changes nothing
  EXPECT_EQ(st.deadline(), t0 + core::Seconds(18));
  // Running has no deadline of its own (steps and the request deadline bound it).
  ASSERT_TRUE(st.Transition(S::kRunning, t0 + core::Seconds(9)));
  EXPECT_FALSE(st.Expired(t0 + core::Seconds(100000)));
}

std::vector<std::byte> Bytes(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (int b : v) out.push_back(static_cast<std::byte>(b));
  return out;
}

TEST(ControlMessages, EveryKindRoundTrips) {
  const std::vector<std::byte> summaries = Bytes({1, 2, 3, 4, 5});
  const std::vector<ControlMessage> all = {
      ControlMessage::PrefillStarted(RequestId{0xabcdull, 7}, KvTicket{0x1111ull, 0x2222ull}),
      ControlMessage::PrefillDone(7, 42, 300),
      ControlMessage::PrefillFailed(7, Unavailable("out of KV")),
      ControlMessage::Summaries(7, summaries),
      ControlMessage::Manifest(7, 3, {{3, 1, 9}, {3, 0, 2}}),
      ControlMessage::Requested(7, {{0, 1, 2}, {5, 0, 7}}),
      ControlMessage::FirstStepManifest(7, 2, {{2, 1, 4}, {2, 0, 0}}),
      ControlMessage::ChoiceTokens(7, {42, 43}),
  };
  for (const ControlMessage& m : all) {
    const std::vector<std::byte> wire = EncodeControl(m);
    auto back = DecodeControl(static_cast<std::uint32_t>(m.type), wire);
    ASSERT_TRUE(back.ok()) << ControlTypeName(m.type) << ": " << back.status().ToString();
    EXPECT_EQ(back->type, m.type);
    EXPECT_EQ(back->request_id, 7u);
    EXPECT_EQ(back->first_token, m.first_token);
    EXPECT_EQ(back->n_prompt, m.n_prompt);
    EXPECT_EQ(back->layer, m.layer);
    EXPECT_EQ(back->blocks, m.blocks);
    EXPECT_EQ(back->failure.code(), m.failure.code());
    EXPECT_EQ(back->request_id_hi, m.request_id_hi);
    EXPECT_EQ(back->ticket, m.ticket);
    EXPECT_EQ(std::vector<std::byte>(back->summaries.begin(), back->summaries.end()),
              std::vector<std::byte>(m.summaries.begin(), m.summaries.end()));
    // Every kind, cut short anywhere or with a byte too many, is refused.
    for (std::size_t n = 0; n < wire.size(); ++n) {
      if (m.type == ControlType::kSummaries && n >= 8) continue;  // any summary length parses here
      auto cut = DecodeControl(static_cast<std::uint32_t>(m.type), std::span(wire).first(n));
      EXPECT_FALSE(cut.ok()) << ControlTypeName(m.type) << " cut at " << n;
    }
    if (m.type != ControlType::kSummaries) {
      std::vector<std::byte> longer = wire;
      longer.push_back(std::byte{0});
      EXPECT_FALSE(DecodeControl(static_cast<std::uint32_t>(m.type), longer).ok()) << ControlTypeName(m.type);
    }
  }
}

TEST(ControlMessages, HostileCountsTypesAndValuesAreRefused) {
  EXPECT_EQ(DecodeControl(0, EncodeControl(ControlMessage::PrefillStarted(RequestId{0, 1}, KvTicket{0, 1}))).status().code(),
            StatusCode::kDataLoss);
  EXPECT_FALSE(DecodeControl(99, EncodeControl(ControlMessage::PrefillStarted(RequestId{0, 1}, KvTicket{0, 1}))).ok());
  // A count of 2^32-1 blocks in a short message: refused without allocating for it.
  std::vector<std::byte> wire = EncodeControl(ControlMessage::Requested(1, {{0, 0, 0}}));
  const std::uint32_t huge = 0xffffffffu;
  std::memcpy(wire.data() + 8, &huge, 4);
  EXPECT_FALSE(DecodeControl(static_cast<std::uint32_t>(ControlType::kRequested), wire).ok());
  wire = EncodeControl(ControlMessage::Manifest(1, 2, {{2, 0, 0}}));
  std::memcpy(wire.data() + 12, &huge, 4);
  EXPECT_FALSE(DecodeControl(static_cast<std::uint32_t>(ControlType::kProactiveManifest), wire).ok());
  std::memcpy(wire.data() + 8, &huge, 4);  // layer 2^32-1
  EXPECT_FALSE(DecodeControl(static_cast<std::uint32_t>(ControlType::kProactiveManifest), wire).ok());
  // Impossible values.
  EXPECT_FALSE(DecodeControl(1, EncodeControl(ControlMessage::PrefillDone(1, -5, 10))).ok());
  EXPECT_FALSE(DecodeControl(1, EncodeControl(ControlMessage::PrefillDone(1, 3, 0))).ok());
  // A failure text longer than the limit is cut when encoded; one claiming more is refused.
  const auto failed = EncodeControl(ControlMessage::PrefillFailed(1, Internal("{}", std::string(10000, 'x'))));
  EXPECT_TRUE(DecodeControl(2, failed).ok());
  std::vector<std::byte> lie = failed;
  const std::uint32_t n = 1u << 30;
  std::memcpy(lie.data() + 12, &n, 4);
  EXPECT_FALSE(DecodeControl(2, lie).ok());
}

TEST(ControlMessages, PrefillDoneCarriesTokenOnesLogprobs) {
  model::TokenLogprobs lp;
  lp.logprob = -0.5f;
  lp.top = {{42, -0.5f}, {7, -1.25f}};
  const std::vector<std::byte> wire = EncodeControl(ControlMessage::PrefillDone(7, 42, 300, &lp));
  auto back = DecodeControl(static_cast<std::uint32_t>(ControlType::kPrefillDone), wire);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_TRUE(back->first_logprobs.has_value());
  EXPECT_EQ(back->first_logprobs->logprob, -0.5f);
  EXPECT_EQ(back->first_logprobs->top, lp.top);
  // Without them, none come back; a count that does not match the bytes is refused.
  auto plain = DecodeControl(1, EncodeControl(ControlMessage::PrefillDone(7, 42, 300)));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->first_logprobs.has_value());
  for (std::size_t n = 8 + 4 + 8 + 1; n < wire.size(); ++n) {
    EXPECT_FALSE(DecodeControl(1, std::span(wire).first(n)).ok()) << "cut at " << n;
  }
  std::vector<std::byte> lying = wire;
  const std::uint32_t many = 1000;
  std::memcpy(lying.data() + 8 + 4 + 8 + 4, &many, sizeof(many));
  EXPECT_FALSE(DecodeControl(1, lying).ok());
}

TEST(DecodeEvents, TokenLogprobsRoundTripAndSamplingTravelsWhole) {
  model::TokenLogprobs lp;
  lp.logprob = -2.0f;
  lp.top = {{3, -1.0f}, {9, -2.0f}};
  auto ev = ParseDecodeEvent(ToJson(DecodeEvent::Token(4, 9, &lp)));
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  ASSERT_TRUE(ev->logprobs.has_value());
  EXPECT_EQ(ev->logprobs->top, lp.top);
  EXPECT_FALSE(ParseDecodeEvent(ToJson(DecodeEvent::Token(4, 9)))->logprobs.has_value());
  nlohmann::json bad = ToJson(DecodeEvent::Token(4, 9, &lp));
  bad["top"] = {{1}};
  EXPECT_FALSE(ParseDecodeEvent(bad).ok());

  model::SamplingParams p{0.7f, 5, 0.9f, 11};
  p.min_p = 0.1f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = -0.25f;
  p.repetition_penalty = 1.2f;
  p.logit_bias = {{5, -100.0f}, {6, 2.5f}};
  p.logprobs = 3;
  auto back = ParseSamplingParams(ToJson(p));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->min_p, p.min_p);
  EXPECT_EQ(back->presence_penalty, p.presence_penalty);
  EXPECT_EQ(back->frequency_penalty, p.frequency_penalty);
  EXPECT_EQ(back->repetition_penalty, p.repetition_penalty);
  EXPECT_EQ(back->logit_bias, p.logit_bias);
  EXPECT_EQ(back->logprobs, 3);
  for (const auto& [field, value] :
       {std::pair{"min_p", 50.0}, {"logprobs", 50.0}, {"repetition_penalty", -1.0}}) {
    nlohmann::json j = ToJson(p);
    j[field] = value;
    EXPECT_FALSE(ParseSamplingParams(j).ok()) << field;
  }
  nlohmann::json j = ToJson(p);
  j["logit_bias"] = {{-1, 2.0}};
  EXPECT_FALSE(ParseSamplingParams(j).ok());
}

TEST(OrderedDelivery, DeliversInOrderExactlyOnce) {
  std::vector<std::int32_t> got;
  OrderedDelivery d([&](std::int32_t t) {
    got.push_back(t);
    return true;
  }, 0, 6);
  EXPECT_TRUE(d.Push(1, 11));  // waits for 0
  EXPECT_TRUE(got.empty());
  EXPECT_TRUE(d.Push(0, 10));
  EXPECT_TRUE(d.Push(0, 10));  // a second copy (token 0 from a fallback) is dropped
  EXPECT_TRUE(d.Push(3, 13));
  EXPECT_TRUE(d.Push(2, 12));
  EXPECT_TRUE(d.Push(1, 99));  // a failover re-run: already delivered
  EXPECT_TRUE(d.Push(9, 19));  // past max_tokens: ignored
  EXPECT_EQ(got, (std::vector<std::int32_t>{10, 11, 12, 13}));
  EXPECT_EQ(d.delivered(), 4);
  EXPECT_FALSE(d.cancelled());
}

TEST(OrderedDelivery, AClientThatLeavesCancelsExceptAtTheLastToken) {
  int seen = 0;
  OrderedDelivery d([&](std::int32_t) { return ++seen < 2; }, 0, 5);
  EXPECT_TRUE(d.Push(0, 1));
  EXPECT_FALSE(d.Push(1, 2));
  EXPECT_TRUE(d.cancelled());
  EXPECT_FALSE(d.Push(2, 3));
  int last = 0;
  OrderedDelivery done([&](std::int32_t) { return ++last < 2; }, 0, 2);
  EXPECT_TRUE(done.Push(0, 1));
  EXPECT_TRUE(done.Push(1, 2));  // the sink said stop at the request's last token: complete
  EXPECT_FALSE(done.cancelled());
}

TEST(ControlMessages, ChoiceTokensCarryEveryOtherChoicesFirstToken) {
  model::TokenLogprobs a{-0.25f, {{9, -0.25f}, {3, -2.0f}}}, b{-1.5f, {{4, -0.5f}}};
  const auto wire = EncodeControl(ControlMessage::ChoiceTokens(7, {42, 43}, {a, b}));
  auto back = DecodeControl(static_cast<std::uint32_t>(ControlType::kChoiceTokens), wire);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->request_id, 7u);
  EXPECT_EQ(back->choice_tokens, (std::vector<std::int32_t>{42, 43}));
  ASSERT_EQ(back->choice_logprobs.size(), 2u);
  EXPECT_EQ(back->choice_logprobs[1].logprob, -1.5f);
  EXPECT_EQ(back->choice_logprobs[0].top, a.top);
  auto plain = DecodeControl(8, EncodeControl(ControlMessage::ChoiceTokens(7, {42})));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_TRUE(plain->choice_logprobs.empty());
  // Short, long, negative tokens and a bad flag are refused.
  for (std::size_t cut = 1; cut < wire.size(); ++cut) {
    EXPECT_FALSE(DecodeControl(8, std::span(wire).first(wire.size() - cut)).ok()) << cut;
  }
  std::vector<std::byte> longer = wire;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(DecodeControl(8, longer).ok());
  EXPECT_FALSE(DecodeControl(8, EncodeControl(ControlMessage::ChoiceTokens(7, {-3}))).ok());
  std::vector<std::byte> flag = EncodeControl(ControlMessage::ChoiceTokens(7, {42}));
  flag.back() = std::byte{2};
  EXPECT_FALSE(DecodeControl(8, flag).ok());
}

TEST(DecodeEvents, TokensNameTheirChoiceAndSpecsTheirCount) {
  auto ev = ParseDecodeEvent(ToJson(DecodeEvent::Token(3, 17, nullptr, 2)));
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_EQ(ev->choice, 2);
  EXPECT_EQ(ev->index, 3);
  EXPECT_FALSE(ToJson(DecodeEvent::Token(3, 17)).contains("choice"));  // choice 0: as before
  nlohmann::json bad = ToJson(DecodeEvent::Token(3, 17));
  bad["choice"] = kMaxChoices;
  EXPECT_FALSE(ParseDecodeEvent(bad).ok());

  GenerationSpec spec;
  spec.prompt = {1, 2, 3};
  spec.n = 4;
  auto back = ParseGenerationSpec(ToJson(spec), "spec");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->n, 4);
  EXPECT_EQ(spec.ChoiceSampling(3).seed, spec.sampling.seed + 3);
  spec.n = 1;
  EXPECT_FALSE(ToJson(spec).contains("n"));
  for (int n : {0, kMaxChoices + 1}) {
    spec.n = n;
    EXPECT_FALSE(ParseGenerationSpec(ToJson(spec), "spec").ok()) << n;
  }
  spec.n = 2;
  spec.forced_tokens = {5};
  EXPECT_FALSE(ParseGenerationSpec(ToJson(spec), "spec").ok());  // teacher forcing: one choice
}

TEST(DecodeKvStore, BlocksBeforeAWindowGoBackToThePool) {
  kv::BlockPool pool(kv::KvGeometry{2, 2, 8, 16, kv::KvDType::kF32}, 100);
  DecodeKvStore store(&pool);
  // 40 prompt tokens + 8 out: 3 blocks per (layer, head). Layer 0 slides and needs only its
  // last block, layer 1 every block.
  const std::int64_t first_needed[] = {2, 0};
  auto e = store.Add(1, 40, 48, /*decodes_early=*/false, first_needed);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(pool.used(), 3 * 2 * 2 - 2 * 2);
  EXPECT_TRUE((*e)->kv.released(0, 1, 1));
  EXPECT_FALSE((*e)->kv.released(0, 1, 2));
  EXPECT_EQ((*e)->residency.needed_total(), 1 * 2 + 3 * 2);
  store.Remove(1);
  e->reset();
  EXPECT_EQ(pool.used(), 0);
}

TEST(OrderedDelivery, EachChoiceIsItsOwnOrderedRun) {
  std::vector<std::vector<std::int32_t>> got(3);
  OrderedDelivery d(
      OrderedDelivery::ChoiceSink([&](int c, std::int32_t t, const model::TokenLogprobs*) {
        got[c].push_back(t);
        return !(c == 1 && t == 21);  // choice 1 stops at its second token
      }),
      0, 3, 3);
  EXPECT_TRUE(d.PushChoice(2, 1, 31));  // waits for choice 2's token 0
  EXPECT_TRUE(d.PushChoice(0, 0, 10));
  EXPECT_TRUE(d.PushChoice(1, 0, 20));
  EXPECT_TRUE(d.PushChoice(1, 1, 21));  // choice 1 ends early: the others go on
  EXPECT_TRUE(d.PushChoice(1, 2, 22));  // dropped: choice 1 has ended
  EXPECT_TRUE(d.PushChoice(2, 0, 30));
  EXPECT_TRUE(d.PushChoice(0, 0, 10));  // a duplicate
  EXPECT_TRUE(d.PushChoice(5, 0, 50));  // no such choice: dropped
  EXPECT_TRUE(d.PushChoice(0, 1, 11));
  EXPECT_TRUE(d.PushChoice(0, 2, 12));  // choice 0 is complete
  EXPECT_FALSE(d.complete());
  EXPECT_EQ(d.delivered(), 3);
  // The last choice ends: every choice has, one before its end - the client has what it wants.
  EXPECT_FALSE(d.PushChoice(2, 2, 32));
  EXPECT_TRUE(d.complete());
  EXPECT_TRUE(d.cancelled());
  EXPECT_EQ(got[0], (std::vector<std::int32_t>{10, 11, 12}));
  EXPECT_EQ(got[1], (std::vector<std::int32_t>{20, 21}));
  EXPECT_EQ(got[2], (std::vector<std::int32_t>{30, 31, 32}));
  // Every choice run to its end is complete, not cancelled.
  OrderedDelivery all(OrderedDelivery::ChoiceSink(
                          [](int, std::int32_t, const model::TokenLogprobs*) { return true; }),
                      0, 1, 2);
  EXPECT_TRUE(all.PushChoice(0, 0, 1));
  EXPECT_TRUE(all.PushChoice(1, 0, 1));
  EXPECT_TRUE(all.complete());
  EXPECT_FALSE(all.cancelled());
}

}  // namespace
}  // namespace smartgen::node
