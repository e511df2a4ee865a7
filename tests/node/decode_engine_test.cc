// DecodeEngine on a real forward pass, without nodes or links: jobs are submitted directly,
// readiness is a flag the test flips, and deadlines are read on a manual clock, so nothing
// here depends on how fast the machine is. Covers teacher forcing (the emitted tokens are the
// forced ones, the reported argmax is the model's own pick after each forced prefix), readiness
// and deadlines of waiting jobs, cancellation, Submit after Stop, and a failing sequence that
// leaves the rest of its batch running.
#include <atomic>
#include <future>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "kv/block_pool.h"
#include "kv/sequence_kv.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/sampler.h"
#include "node/decode/decode_engine.h"
#include "node_test_util.h"

namespace smartgen::node {
namespace {

struct EngineOutcome {
  Status status;
  std::string reason;
  nlohmann::json stats;
  std::vector<std::int32_t> tokens;
};

// One sequence's KV and the promise its on_done fulfils.
struct EngineSeq {
  explicit EngineSeq(kv::BlockPool* pool) : kv(pool) {}
  kv::SequenceKv kv;
  EngineOutcome out;
  int first_index = -1;  // index of the first token the engine emitted
  std::promise<void> promise;
  std::future<void> done = promise.get_future();
};

class DecodeEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = model::Model::Load(testing::SmallModelPath(61));
    ASSERT_TRUE(m.ok());
    model_ = std::move(*m);
    forward_ = std::make_unique<model::Forward>(*model_, &pool_);
    blocks_ = std::make_unique<kv::BlockPool>(forward_->KvGeometryFor(kv::KvDType::kF32, 16), 1024);
  }

  std::vector<std::int32_t> Prompt(int n, int salt) const {
    std::vector<std::int32_t> p(n);
    for (int i = 0; i < n; ++i) p[i] = 3 + (i * 29 + salt * 7) % 200;
    return p;
  }

  // A job over `seq` that records what it emits; `ready` null = prefill locally at once.
  EngineJob Job(std::uint64_t id, EngineSeq* seq, GenerationSpec spec,
                std::function<Readiness()> ready = nullptr) {
    EXPECT_TRUE(seq->kv.Reserve(static_cast<std::int64_t>(spec.prompt.size()) + spec.max_tokens).ok());
    EngineJob job;
    job.request_id = id;
    job.kv = &seq->kv;
    job.spec = std::move(spec);
    job.ready = std::move(ready);
    job.on_token = [seq](int index, std::int32_t t, const model::TokenLogprobs*) {
      if (seq->first_index < 0) seq->first_index = index;
      EXPECT_EQ(index, seq->first_index + static_cast<int>(seq->out.tokens.size()));
      seq->out.tokens.push_back(t);
      return true;
    };
    job.on_done = [seq](const Status& st, const std::string& reason, const nlohmann::json& stats) {
      seq->out.status = st;
      seq->out.reason = reason;
      seq->out.stats = stats;
      seq->promise.set_value();
    };
    return job;
  }

  static bool Wait(EngineSeq& seq) {
    return seq.done.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  }

  // Greedy decoding in a single process: the reference for the engine's own picks.
  std::vector<std::int32_t> GreedyAfter(const std::vector<std::int32_t>& prompt,
                                        const std::vector<std::int32_t>& forced) {
    kv::SequenceKv kv(blocks_.get());
    EXPECT_TRUE(kv.Reserve(static_cast<std::int64_t>(prompt.size() + forced.size()) + 1).ok());
    std::vector<float> logits;
    EXPECT_TRUE(forward_->RunOne(&kv, prompt, &logits).ok());
    std::vector<std::int32_t> picks = {model::Greedy(logits)};
    for (std::size_t i = 0; i + 1 < forced.size(); ++i) {
      const std::int32_t t = forced[i];
      EXPECT_TRUE(forward_->RunOne(&kv, std::span<const std::int32_t>(&t, 1), &logits).ok());
      picks.push_back(model::Greedy(logits));
    }
    return picks;
  }

  core::ThreadPool pool_{1};
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<model::Forward> forward_;
  std::unique_ptr<kv::BlockPool> blocks_;
};

GenerationSpec Spec(std::vector<std::int32_t> prompt, int max_tokens) {
  GenerationSpec spec;
  spec.prompt = std::move(prompt);
  spec.max_tokens = max_tokens;
  spec.stop_at_eog = false;
  return spec;
}

TEST_F(DecodeEngineTest, TeacherForcingEmitsTheForcedTokensAndReportsTheModelsOwnPicks) {
  DecodeEngine engine(forward_.get());
  // Forced tokens that are not what the model would pick, so each step's argmax depends on
  // the forced prefix before it.
  GenerationSpec spec = Spec(Prompt(40, 1), 10);
  for (int i = 0; i < 10; ++i) spec.forced_tokens.push_back(5 + (i * 37) % 180);
  const std::vector<std::int32_t> forced = spec.forced_tokens;
  EngineSeq seq(blocks_.get());
  engine.Submit(Job(1, &seq, spec));
  ASSERT_TRUE(Wait(seq));
  ASSERT_TRUE(seq.out.status.ok()) << seq.out.status.ToString();
  EXPECT_EQ(seq.out.reason, "length");
  EXPECT_EQ(seq.out.tokens, forced);
  ASSERT_TRUE(seq.out.stats.contains("argmax_tokens"));
  const auto own = seq.out.stats["argmax_tokens"].get<std::vector<std::int32_t>>();
  EXPECT_EQ(own, GreedyAfter(spec.prompt, forced));
  EXPECT_NE(own, forced);  // the check above could not pass by echoing the forced tokens
  // Token 0 came from the local prefill; each of the other nine from a timed decode step.
  const auto steps = seq.out.stats["step_ms_per_step"].get<std::vector<double>>();
  ASSERT_EQ(steps.size(), 9u);
  for (double ms : steps) EXPECT_GT(ms, 0.0);
}

TEST_F(DecodeEngineTest, ForcingTheModelsOwnOutputChangesNothing) {
  DecodeEngine engine(forward_.get());
  EngineSeq free_run(blocks_.get());
  engine.Submit(Job(1, &free_run, Spec(Prompt(30, 2), 8)));
  ASSERT_TRUE(Wait(free_run));
  EXPECT_FALSE(free_run.out.stats.contains("argmax_tokens"));  // only when forcing

  GenerationSpec spec = Spec(Prompt(30, 2), 8);
  spec.forced_tokens = free_run.out.tokens;
  EngineSeq forced(blocks_.get());
  engine.Submit(Job(2, &forced, spec));
  ASSERT_TRUE(Wait(forced));
  EXPECT_EQ(forced.out.tokens, free_run.out.tokens);
  EXPECT_EQ(forced.out.stats["argmax_tokens"].get<std::vector<std::int32_t>>(), free_run.out.tokens);
}

TEST_F(DecodeEngineTest, TokenZeroFromThePrefillNodeIsRecordedAsItsPick) {
  DecodeEngine engine(forward_.get());
  // The "prefill node" computed the prompt into this KV and sampled token 0.
  const std::vector<std::int32_t> prompt = Prompt(50, 3);
  EngineSeq seq(blocks_.get());
  GenerationSpec spec = Spec(prompt, 4);
  spec.forced_tokens = {7, 8, 9, 10};
  EngineJob job = Job(3, &seq, spec);
  std::vector<float> logits;
  ASSERT_TRUE(forward_->RunOne(&seq.kv, prompt, &logits).ok());
  const std::int32_t token0 = model::Greedy(logits);
  job.ready = [token0] { return Readiness::Go(token0); };
  engine.Submit(std::move(job));
  ASSERT_TRUE(Wait(seq));
  ASSERT_TRUE(seq.out.status.ok());
  // Token 0 is emitted by the node layer for a prefilled request, so the engine emits 1..3.
  EXPECT_EQ(seq.first_index, 1);
  EXPECT_EQ(seq.out.tokens, std::vector<std::int32_t>({8, 9, 10}));
  const auto own = seq.out.stats["argmax_tokens"].get<std::vector<std::int32_t>>();
  ASSERT_EQ(own.size(), 4u);
  EXPECT_EQ(own[0], token0);
  EXPECT_EQ(own, GreedyAfter(prompt, spec.forced_tokens));
}

TEST_F(DecodeEngineTest, AWaitingJobStartsWhenReadyAndExpiresOnItsDeadline) {
  core::ManualClock clock(1'000'000);
  DecodeEngineOptions options;
  options.clock = &clock;
  options.idle_wait = core::Millis(1);
  DecodeEngine engine(forward_.get(), options);

  std::atomic<bool> ready{false};
  EngineSeq starts(blocks_.get()), expires(blocks_.get());
  EngineJob a = Job(1, &starts, Spec(Prompt(20, 4), 3), [&] {
    return ready.load() ? Readiness::PrefillLocally() : Readiness::Wait();
  });
  a.deadline = core::Deadline::At(clock.Now() + core::Seconds(10));
  EngineJob b = Job(2, &expires, Spec(Prompt(20, 5), 3), [] { return Readiness::Wait(); });
  b.deadline = core::Deadline::At(clock.Now() + core::Seconds(5));
  engine.Submit(std::move(a));
  engine.Submit(std::move(b));

  // Real time passes but the manual clock does not: both keep waiting.
  EXPECT_EQ(starts.done.wait_for(std::chrono::milliseconds(50)),
            std::future_status::timeout);
  clock.Advance(core::Seconds(6));  // b's deadline passes, a's does not
  ASSERT_TRUE(Wait(expires));
  EXPECT_EQ(expires.out.status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(expires.out.tokens.empty());
  ready.store(true);
  engine.Wake();
  ASSERT_TRUE(Wait(starts));
  EXPECT_TRUE(starts.out.status.ok());
  EXPECT_EQ(starts.out.tokens.size(), 3u);
}

TEST_F(DecodeEngineTest, CancelEndsAWaitingJobAndSubmitAfterStopCancels) {
  DecodeEngine engine(forward_.get());
  EngineSeq waiting(blocks_.get());
  engine.Submit(Job(9, &waiting, Spec(Prompt(20, 6), 3), [] { return Readiness::Wait(); }));
  engine.Cancel(9);
  ASSERT_TRUE(Wait(waiting));
  EXPECT_TRUE(waiting.out.status.ok());
  EXPECT_EQ(waiting.out.reason, "cancelled");

  engine.Stop();
  EngineSeq late(blocks_.get());
  engine.Submit(Job(10, &late, Spec(Prompt(20, 7), 3)));
  ASSERT_TRUE(Wait(late));
  EXPECT_EQ(late.out.status.code(), StatusCode::kCancelled);
}

// An attention override that fails every call: a sequence whose KV link died.
class FailingAttention final : public model::AttentionOverride {
 public:
  Status Attend(int, const float*, std::int64_t, float*) override {
    return Unavailable("the link is gone");
  }
};

TEST_F(DecodeEngineTest, AFailingSequenceEndsAloneAndItsBatchKeepsGoing) {
  DecodeEngine engine(forward_.get());
  FailingAttention failing;
  const std::vector<std::int32_t> p1 = Prompt(24, 8), p2 = Prompt(24, 9);
  EngineSeq good(blocks_.get()), bad(blocks_.get());
  EngineJob g = Job(1, &good, Spec(p1, 6));
  EngineJob b = Job(2, &bad, Spec(p2, 6));
  // Both prefill locally (dense), then decode together; b's decode steps fail.
  std::vector<float> logits;
  ASSERT_TRUE(forward_->RunOne(&bad.kv, p2, &logits).ok());
  const std::int32_t t0 = model::Greedy(logits);
  b.ready = [t0] { return Readiness::Go(t0); };
  b.attention = &failing;
  engine.Submit(std::move(g));
  engine.Submit(std::move(b));
  ASSERT_TRUE(Wait(good));
  ASSERT_TRUE(Wait(bad));
  EXPECT_TRUE(good.out.status.ok());
  EXPECT_EQ(good.out.tokens.size(), 6u);
  EXPECT_EQ(bad.out.status.code(), StatusCode::kUnavailable);
  // The good sequence's tokens are those of decoding it alone.
  GenerationSpec alone = Spec(p1, 6);
  EngineSeq ref(blocks_.get());
  engine.Submit(Job(3, &ref, alone));
  ASSERT_TRUE(Wait(ref));
  EXPECT_EQ(good.out.tokens, ref.out.tokens);
}

}  // namespace
}  // namespace smartgen::node
