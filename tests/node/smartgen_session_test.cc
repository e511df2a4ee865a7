// SmartgenSession's bounded wait, without a link: the fetch function only records what it is
// asked for, and the test "lands" blocks by marking them present. A step attends over exactly
// the selected blocks present when it runs (the others are left out, not waited for); a block
// that lands is used from the next step on; nothing is asked for twice. Logits are compared
// with SelectiveAttention over the same block sets, step by step, on a real forward pass.
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <thread>
#include <tuple>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "kv/block_pool.h"
#include "kv/residency.h"
#include "kv/sequence_kv.h"
#include "model/forward.h"
#include "model/model.h"
#include "node/decode/smartgen_session.h"
#include "node/decode/staged_copies.h"
#include "node_test_util.h"
#include "select/block_summary.h"
#include "select/path_sizing.h"
#include "select/selective_attention.h"

namespace smartgen::node {
namespace {

using Key = std::tuple<int, int, int>;

// Selects every prompt block except those in `absent` (what a session attends over).
class PresentChooser final : public select::BlockChooser {
 public:
  PresentChooser(int n_heads, std::int32_t n_blocks) : n_heads_(n_heads), n_blocks_(n_blocks) {}
  std::set<Key> absent;
  Status Choose(int layer, const float*, std::int64_t, select::LayerSelection* out) override {
    out->heads.assign(n_heads_, {});
    for (int h = 0; h < n_heads_; ++h) {
      for (std::int32_t b = 0; b < n_blocks_; ++b) {
        if (!absent.count({layer, h, b})) out->heads[h].push_back(b);
      }
    }
    return Status::Ok();
  }

 private:
  int n_heads_;
  std::int32_t n_blocks_;
};

// A small model (testing::SmallModelPath(seed)) with a one-thread Forward and an f32 block pool:
// what every test here decodes with.
struct SmallEngine {
  explicit SmallEngine(int seed) {
    auto m = model::Model::Load(testing::SmallModelPath(seed));
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if (!m.ok()) return;
    model = std::move(*m);
    forward = std::make_unique<model::Forward>(*model, &pool);
    blocks = std::make_unique<kv::BlockPool>(forward->KvGeometryFor(kv::KvDType::kF32, 16), 1 << 12);
  }
  bool ok() const { return blocks != nullptr; }

  std::unique_ptr<model::Model> model;
  core::ThreadPool pool{1};
  std::unique_ptr<model::Forward> forward;
  std::unique_ptr<kv::BlockPool> blocks;
};

// n prompt tokens: first + (i * step) % span.
std::vector<std::int32_t> SessionPrompt(int n, int first, int step, int span) {
  std::vector<std::int32_t> prompt(n);
  for (int i = 0; i < n; ++i) prompt[i] = first + (i * step) % span;
  return prompt;
}

TEST(SmartgenSession, LateBlocksAreLeftOutThenUsedFromTheStepTheyLandIn) {
  SmallEngine engine(51);
  ASSERT_TRUE(engine.ok());
  const model::ModelConfig& cfg = engine.model->config();
  model::Forward& forward = *engine.forward;
  kv::BlockPool& blocks = *engine.blocks;
  const std::vector<std::int32_t> prompt = SessionPrompt(200, 3, 41, 250);
  const std::int32_t n_blocks = (200 + 15) / 16;

  // Two identical prefills: one sequence decodes through the session, the other through
  // SelectiveAttention over the block sets the session should use.
  kv::SequenceKv seq_a(&blocks), seq_b(&blocks);
  for (kv::SequenceKv* s : {&seq_a, &seq_b}) ASSERT_TRUE(forward.RunOne(s, prompt, nullptr).ok());

  kv::Residency residency(cfg.n_layers, cfg.n_kv_heads, n_blocks);
  residency.MarkAllPresent();
  const std::set<Key> late = {{1, 0, 3}, {1, 0, 4}, {1, 1, 9}, {2, 1, 7}, {3, 0, 0}};
  for (const auto& [l, h, b] : late) residency.MarkAbsent(l, h, b);

  select::SmartgenOptions options;
  options.on_demand.budget_fraction = 1.0f;  // every block selected
  options.predict_next = false;
  options.wait_bound_ms = 0;  // never wait: what is not here is left out
  options.first_step = false;  // no prefill node here to run it
  std::map<Key, int> asked;
  SmartgenSession session(
      cfg, &seq_a, &residency, 200, options, nullptr, select::NeededBlocks{},
      [&](const std::vector<kv::BlockKey>& keys) {
        for (const auto& k : keys) ++asked[{k.layer, k.kv_head, k.block}];
        return Status::Ok();
      },
      [] { return Internal("no recompute in this test"); }, core::Seconds(5));
  for (int l = 0; l < cfg.n_layers; ++l) {
    const auto wire = select::LayerSummaries::Build(seq_a, l, 200).Serialize();
    ASSERT_TRUE(session.AddSummaries(wire).ok());
    ASSERT_TRUE(session.AddManifest(l, {}).ok());
  }
  ASSERT_TRUE(session.Ready(core::NowNanos()));

  PresentChooser chooser(cfg.n_kv_heads, n_blocks);
  chooser.absent = late;
  select::SelectiveAttention reference(cfg, &seq_b, 200, &chooser);
  auto step = [&](std::int32_t token, std::vector<float>* la, std::vector<float>* lb) {
    model::ForwardChunk a, b;
    a.kv = &seq_a;
    b.kv = &seq_b;
    a.tokens = b.tokens = std::span<const std::int32_t>(&token, 1);
    a.logits = la;
    b.logits = lb;
    a.attention = &session;
    b.attention = &reference;
    model::ForwardChunk ca[1] = {a}, cb[1] = {b};
    ASSERT_TRUE(forward.Run(ca).ok());
    ASSERT_TRUE(forward.Run(cb).ok());
  };
  auto max_diff = [](const std::vector<float>& x, const std::vector<float>& y) {
    double m = 0;
    for (std::size_t i = 0; i < x.size(); ++i) m = std::max(m, double(std::abs(x[i] - y[i])));
    return m;
  };

  // Step 1: the late blocks are asked for once and left out.
  std::vector<float> la, lb, dense;
  step(17, &la, &lb);
  EXPECT_LT(max_diff(la, lb), 1e-4);
  {
    // Leaving the blocks out matters: a dense step over the same prompt differs.
    kv::SequenceKv seq_c(&blocks);
    ASSERT_TRUE(forward.RunOne(&seq_c, prompt, nullptr).ok());
    const std::int32_t token = 17;
    model::ForwardChunk c;
    c.kv = &seq_c;
    c.tokens = std::span<const std::int32_t>(&token, 1);
    c.logits = &dense;
    model::ForwardChunk cc[1] = {c};
    ASSERT_TRUE(forward.Run(cc).ok());
    EXPECT_GT(max_diff(la, dense), 1e-4);
  }
  for (const Key& k : late) EXPECT_EQ(asked[k], 1) << std::get<0>(k) << "/" << std::get<1>(k) << "/" << std::get<2>(k);
  EXPECT_EQ(asked.size(), late.size()) << "only the absent selected blocks are fetched";

  // Two of them land: the next step uses them, and nothing is asked for again.
  for (const Key& k : {Key{1, 0, 3}, Key{2, 1, 7}}) {
    residency.MarkPresent(std::get<0>(k), std::get<1>(k), std::get<2>(k));
    chooser.absent.erase(k);
  }
  step(23, &la, &lb);
  EXPECT_LT(max_diff(la, lb), 1e-4);
  for (const Key& k : late) EXPECT_EQ(asked[k], 1) << "asked twice";

  // The rest land: from then on the session is exact (dense).
  for (const auto& [l, h, b] : late) residency.MarkPresent(l, h, b);
  chooser.absent.clear();
  step(29, &la, &lb);
  EXPECT_LT(max_diff(la, lb), 1e-4);
  EXPECT_TRUE(session.exact());

  const auto stats = session.Stats(0, 0, 0);
  EXPECT_EQ(stats["late_blocks"].get<std::int64_t>(), 5 + 3) << stats.dump();  // step 1: 5, step 2: 3
  ASSERT_GE(stats["present_mass_share_per_step"].size(), 2u) << stats.dump();
  EXPECT_LT(stats["present_mass_share_per_step"][0].get<double>(), 1.0);
  EXPECT_GT(stats["present_mass_share_per_step"][0].get<double>(), 0.5);
  // Per step (those that ended): the blocks asked for add up to the total (the last, exact
  // step asks for none), and a step's own time holds its selection and local attention.
  const auto requested = stats["blocks_requested_per_step"].get<std::vector<std::int64_t>>();
  const nlohmann::json& phases = stats["selective_ms_per_step"];
  ASSERT_GE(requested.size(), 2u);
  ASSERT_EQ(phases["own"].size(), requested.size());
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < requested.size(); ++i) {
    sum += requested[i];
    EXPECT_GE(phases["own"][i].get<double>() + 1e-6,
              phases["select"][i].get<double>() + phases["local_attention"][i].get<double>()) << i;
  }
  EXPECT_EQ(sum, stats["blocks_requested"].get<std::int64_t>());
  EXPECT_GT(requested[0], 0);
  // The local attention of the selective layers (a complete layer is dense) read every present
  // prompt block: step 1, layers 1-3 less the 5 late blocks; step 2, layers 1 and 3 (layer 2
  // completed) less the 3 still late.
  const auto attended = stats["attended_blocks_per_step"].get<std::vector<std::int64_t>>();
  ASSERT_EQ(attended.size(), requested.size());
  const std::int64_t layer_blocks = std::int64_t{cfg.n_kv_heads} * n_blocks;
  EXPECT_EQ(attended[0], 3 * layer_blocks - 5);
  EXPECT_EQ(attended[1], 2 * layer_blocks - 3);
  EXPECT_TRUE(stats.contains("first_attend_ms"));
}

TEST(SmartgenSession, ANextLayerGuessIsCheckedBeforeItIsFetched) {
  SmallEngine engine(52);
  ASSERT_TRUE(engine.ok());
  const model::ModelConfig& cfg = engine.model->config();
  ASSERT_GE(cfg.n_layers, 3);
  model::Forward& forward = *engine.forward;
  kv::BlockPool& blocks = *engine.blocks;
  constexpr int kPrompt = 1024;  // 64 blocks per head: one layer's guess ends the warm-up
  const std::vector<std::int32_t> prompt = SessionPrompt(kPrompt, 3, 37, 250);
  kv::SequenceKv seq(&blocks);
  ASSERT_TRUE(forward.RunOne(&seq, prompt, nullptr).ok());
  const std::int32_t n_blocks = kPrompt / 16;
  kv::Residency residency(cfg.n_layers, cfg.n_kv_heads, n_blocks);  // nothing present

  select::SmartgenOptions options;
  options.on_demand.budget_fraction = 1.0f;  // every block selected: every guess is a hit
  options.predict_next = true;
  options.wait_bound_ms = 0;  // nothing lands here: never wait
  options.first_step = false;
  std::vector<std::vector<kv::BlockKey>> calls;  // each fetch, in order
  SmartgenSession session(
      cfg, &seq, &residency, kPrompt, options, nullptr, select::NeededBlocks{},
      [&](const std::vector<kv::BlockKey>& keys) {
        calls.push_back(keys);
        return Status::Ok();
      },
      [] { return Internal("no recompute in this test"); }, core::Seconds(5));
  for (int l = 0; l < cfg.n_layers; ++l) {
    ASSERT_TRUE(session.AddSummaries(select::LayerSummaries::Build(seq, l, kPrompt).Serialize()).ok());
    ASSERT_TRUE(session.AddManifest(l, {}).ok());
  }
  ASSERT_TRUE(session.Ready(core::NowNanos()));
  const std::int32_t token = 17;
  std::vector<float> logits;
  model::ForwardChunk c;
  c.kv = &seq;
  c.tokens = std::span<const std::int32_t>(&token, 1);
  c.logits = &logits;
  c.attention = &session;
  model::ForwardChunk cc[1] = {c};
  ASSERT_TRUE(forward.Run(cc).ok());

  auto layers_of = [](const std::vector<kv::BlockKey>& keys) {
    std::set<int> out;
    for (const auto& k : keys) out.insert(k.layer);
    return out;
  };
  // Layer 0 asks for its own blocks; its guess at layer 1 is only scored (unchecked), so layer
  // 1 asks for its own; layer 1's guess (checked on layer 1's blocks, all hits) is fetched at
  // once: layer 2's blocks are asked for before layer 2 runs.
  ASSERT_GE(calls.size(), 3u);
  EXPECT_EQ(layers_of(calls[0]), std::set<int>{0});
  EXPECT_EQ(layers_of(calls[1]), std::set<int>{1});
  // Layer 1's own fetch, capped (an early guess would have asked for all of them, uncapped).
  ASSERT_GT(cfg.n_kv_heads * n_blocks, select::kDefaultFetchCapBlocks);
  EXPECT_EQ(calls[1].size(), static_cast<std::size_t>(select::kDefaultFetchCapBlocks));
  EXPECT_EQ(layers_of(calls[2]), std::set<int>{2});
  EXPECT_EQ(calls[2].size(), static_cast<std::size_t>(cfg.n_kv_heads * n_blocks))
      << "the guess asks for every absent block it predicts";
  const auto stats = session.Stats(0, 0, 0);
  EXPECT_GE(stats["predicted_blocks"].get<std::int64_t>(), select::kPredictionWarmupBlocks);
  EXPECT_GT(stats["predicted_fetched_blocks"].get<std::int64_t>(), 0);
  EXPECT_DOUBLE_EQ(stats["prediction_hit_rate"].get<double>(), 1.0);
}

TEST(SmartgenSession, TheFirstStepWaitsForThePrefillNodesBlocksAndUsesThem) {
  SmallEngine engine(52);
  ASSERT_TRUE(engine.ok());
  const model::ModelConfig& cfg = engine.model->config();
  model::Forward& forward = *engine.forward;
  kv::BlockPool& blocks = *engine.blocks;
  const std::vector<std::int32_t> prompt = SessionPrompt(160, 5, 37, 240);
  const std::int32_t n_blocks = 10;
  kv::SequenceKv seq_a(&blocks), seq_dense(&blocks);
  for (kv::SequenceKv* s : {&seq_a, &seq_dense}) ASSERT_TRUE(forward.RunOne(s, prompt, nullptr).ok());

  kv::Residency residency(cfg.n_layers, cfg.n_kv_heads, n_blocks);
  residency.MarkAllPresent();
  residency.MarkAbsent(1, 0, 3);  // announced by the prefill node's first step
  residency.MarkAbsent(2, 1, 7);  // selected here, fetched on demand
  select::SmartgenOptions options;
  options.on_demand.budget_fraction = 1.0f;
  options.predict_next = false;
  options.wait_bound_ms = 0;        // later steps never wait
  options.first_wait_ms = 20000;    // the first one does (the blocks land long before)
  std::map<Key, int> asked;
  SmartgenSession session(
      cfg, &seq_a, &residency, 160, options, nullptr, select::NeededBlocks{},
      [&](const std::vector<kv::BlockKey>& keys) {
        for (const auto& k : keys) ++asked[{k.layer, k.kv_head, k.block}];
        return Status::Ok();
      },
      [] { return Internal("no recompute in this test"); }, core::Seconds(30));
  for (int l = 0; l < cfg.n_layers; ++l) {
    ASSERT_TRUE(session.AddSummaries(select::LayerSummaries::Build(seq_a, l, 160).Serialize()).ok());
    ASSERT_TRUE(session.AddManifest(l, {}).ok());
  }
  EXPECT_FALSE(session.Ready(core::NowNanos())) << "the first-step manifests are still to come";
  EXPECT_FALSE(session.AddFirstStep(1, {{1, 0, n_blocks}}).ok()) << "a block outside the prompt";
  for (int l = 0; l < cfg.n_layers; ++l) {
    ASSERT_TRUE(session
                    .AddFirstStep(l, l == 1 ? std::vector<kv::BlockKey>{{1, 0, 3}}
                                            : std::vector<kv::BlockKey>{})
                    .ok());
  }
  ASSERT_TRUE(session.Ready(core::NowNanos()));
  EXPECT_EQ(residency.state(1, 0, 3), kv::BlockState::kAbsent);  // on its way, not fetched

  // Both blocks land while the first step waits; it then attends over everything (dense).
  std::thread lands([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    residency.MarkPresent(1, 0, 3);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    residency.MarkPresent(2, 1, 7);
  });
  const std::int32_t token = 11;
  std::vector<float> got, dense;
  for (auto [kv, attention, logits] : {std::tuple{&seq_a, static_cast<model::AttentionOverride*>(&session), &got},
                                       std::tuple{&seq_dense, static_cast<model::AttentionOverride*>(nullptr), &dense}}) {
    model::ForwardChunk c;
    c.kv = kv;
    c.tokens = std::span<const std::int32_t>(&token, 1);
    c.logits = logits;
    c.attention = attention;
    model::ForwardChunk cc[1] = {c};
    ASSERT_TRUE(forward.Run(cc).ok());
  }
  lands.join();
  double diff = 0;
  for (std::size_t i = 0; i < got.size(); ++i) diff = std::max(diff, double(std::abs(got[i] - dense[i])));
  EXPECT_LT(diff, 1e-4);
  // The announced block was never fetched (it was on its way); the other one was, once.
  EXPECT_EQ(asked.count({1, 0, 3}), 0u);
  EXPECT_EQ(asked[Key(2, 1, 7)], 1);
  EXPECT_GT(session.Stats(0, 0, 0)["layer_stall_ms"][1].get<double>(), 0.0);
}

// The partial last prompt block of a SmartGen request lands staged (StagedCopies): a step that
// waits for it (every block selected, no wait bound) must apply it when it lands, not wait out
// the step timeout and recompute the prompt (the netns_deploy test's occasional fallback).
TEST(SmartgenSession, AStagedLastBlockThatLandsDuringAWaitIsAppliedAtOnce) {
  SmallEngine engine(51);
  ASSERT_TRUE(engine.ok());
  const model::ModelConfig& cfg = engine.model->config();
  model::Forward& forward = *engine.forward;
  kv::BlockPool& blocks = *engine.blocks;
  constexpr std::int64_t kPrompt = 200;  // 12.5 blocks: the last one partial
  const std::vector<std::int32_t> prompt = SessionPrompt(kPrompt, 3, 37, 250);
  const std::int32_t n_blocks = (kPrompt + 15) / 16;
  kv::SequenceKv seq(&blocks), source(&blocks);
  for (kv::SequenceKv* s : {&seq, &source}) ASSERT_TRUE(forward.RunOne(s, prompt, nullptr).ok());

  kv::Residency residency(cfg.n_layers, cfg.n_kv_heads, n_blocks);
  residency.MarkAllPresent();
  const kv::BlockKey last{1, 0, n_blocks - 1};
  residency.MarkAbsent(last.layer, last.kv_head, last.block);
  std::memset(seq.BlockData(last.layer, last.kv_head, last.block), 0, blocks.geometry().block_bytes());
  StagedCopies staged(&seq, &residency, kPrompt, /*stage_last_block=*/true);

  select::SmartgenOptions options;
  options.on_demand.budget_fraction = 1.0f;
  options.predict_next = false;
  options.wait_bound_ms = 1e6;  // wait for every block, up to the step timeout
  options.first_step = false;
  std::vector<std::thread> senders;
  int recomputes = 0;
  SmartgenSession session(
      cfg, &seq, &residency, kPrompt, options, nullptr, select::NeededBlocks{},
      [&](const std::vector<kv::BlockKey>& keys) {
        for (const kv::BlockKey& k : keys) {
          // The link delivers it 50 ms later, into the staging buffer Prepare hands out.
          senders.emplace_back([&, k] {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            transfer::BlockDestination dst;
            ASSERT_EQ(staged.Prepare(k, transfer::WireFormat::kNative, nullptr, &dst),
                      transfer::SinkAction::kWrite);
            const std::byte* src = source.BlockData(k.layer, k.kv_head, k.block);
            std::memcpy(dst.k.data(), src, dst.k.size());
            std::memcpy(dst.v.data(), src + dst.k.size(), dst.v.size());
            EXPECT_FALSE(staged.OnReady(k, transfer::WireFormat::kNative, dst, nullptr)) << "staged";
            residency.Wake();
          });
        }
        return Status::Ok();
      },
      [&] {
        ++recomputes;
        return Internal("the step waited out its timeout");
      },
      core::Seconds(5));
  session.set_staged(&staged);
  for (int l = 0; l < cfg.n_layers; ++l) {
    ASSERT_TRUE(session.AddSummaries(select::LayerSummaries::Build(source, l, kPrompt).Serialize()).ok());
    ASSERT_TRUE(session.AddManifest(l, {}).ok());
  }
  ASSERT_TRUE(session.Ready(core::NowNanos()));

  const std::int32_t token = 17;
  std::vector<float> got, want;
  model::ForwardChunk a;
  a.kv = &seq;
  a.tokens = std::span<const std::int32_t>(&token, 1);
  a.logits = &got;
  a.attention = &session;
  model::ForwardChunk ca[1] = {a};
  const Status st = forward.Run(ca);
  for (std::thread& t : senders) t.join();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(recomputes, 0);
  EXPECT_TRUE(residency.present(last.layer, last.kv_head, last.block));
  EXPECT_EQ(staged.staged_total(), 1);

  // The step attended over the whole prompt: the same logits as a dense step.
  model::ForwardChunk b;
  b.kv = &source;
  b.tokens = a.tokens;
  b.logits = &want;
  model::ForwardChunk cb[1] = {b};
  ASSERT_TRUE(forward.Run(cb).ok());
  ASSERT_EQ(got.size(), want.size());
  double diff = 0;
  for (std::size_t i = 0; i < got.size(); ++i) diff = std::max(diff, double(std::abs(got[i] - want[i])));
  EXPECT_LT(diff, 1e-4);
}

}  // namespace
}  // namespace smartgen::node
