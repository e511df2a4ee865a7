// Forward's team step (forward_team.cc): a decode step of one sequence run as one pool job gives
// the logits and KV rows of the pass-by-pass step bit for bit, for each architecture, on pools of
// two and three threads, with and without the fast dot products, and when the pool is busy (the
// caller then runs the whole step alone).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "core/lane_shares.h"
#include "kernels/matmul.h"
#include "model/forward.h"
#include "model/synthetic_model.h"

namespace smartgen::model {
namespace {

std::unique_ptr<Model> MakeTeamModel(const std::string& preset, gguf::GgmlType type) {
  SyntheticModelSpec spec;
  spec.preset = *FindPreset(preset);
  spec.type = type;
  spec.seed = 5;
  spec.out = ::testing::TempDir() + "/forward_team_test_" + preset + "_" +
             std::string(gguf::GetTypeInfo(type).name) + ".gguf";
  const Status s = WriteSyntheticModel(spec);
  EXPECT_TRUE(s.ok()) << s.ToString();
  auto m = Model::Load(spec.out);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(*m) : nullptr;
}

// The prompt, then `steps` decode steps one token at a time, on a fresh sequence of `blocks`;
// the logits of every step, in order.
std::vector<std::vector<float>> TeamDecode(Forward& forward, kv::BlockPool& blocks,
                                       kv::SequenceKv* seq, int steps) {
  std::vector<std::int32_t> prompt(23);
  for (std::size_t i = 0; i < prompt.size(); ++i) prompt[i] = 3 + static_cast<std::int32_t>(i * 41 % 240);
  std::vector<std::vector<float>> out;
  std::vector<float> logits;
  EXPECT_TRUE(forward.RunOne(seq, prompt, &logits).ok());
  std::int32_t next = 7;
  for (int s = 0; s < steps; ++s) {
    EXPECT_TRUE(forward.RunOne(seq, std::span<const std::int32_t>(&next, 1), &logits).ok());
    out.push_back(logits);
    next = 3 + static_cast<std::int32_t>((next * 29 + s) % 240);
  }
  (void)blocks;
  return out;
}

bool TeamSameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Whether two sequences hold the same K/V bytes at every layer, head and position.
bool TeamSameKv(kv::SequenceKv& a, kv::SequenceKv& b) {
  const kv::KvGeometry& g = a.geometry();
  if (a.n_tokens() != b.n_tokens()) return false;
  for (int l = 0; l < g.n_layers; ++l) {
    for (int h = 0; h < g.n_kv_heads; ++h) {
      for (std::int64_t p = 0; p < a.n_tokens(); ++p) {
        if (std::memcmp(a.KRow(l, h, p), b.KRow(l, h, p), g.row_bytes()) != 0 ||
            std::memcmp(a.VRow(l, h, p), b.VRow(l, h, p), g.row_bytes()) != 0) {
          return false;
        }
      }
    }
  }
  return true;
}

struct TeamCase {
  const char* preset;
  gguf::GgmlType type;
};

void PrintTo(const TeamCase& c, std::ostream* os) { *os << c.preset << " " << gguf::GetTypeInfo(c.type).name; }

class ForwardTeamTest : public ::testing::TestWithParam<TeamCase> {};

// Options of the Forward that decodes pass by pass, the team step's reference.
ForwardOptions PassByPass() {
  ForwardOptions o;
  o.team_decode = false;
  return o;
}

TEST_P(ForwardTeamTest, DecodeStepsEqualPassByPassBitForBit) {
  const auto model = MakeTeamModel(GetParam().preset, GetParam().type);
  ASSERT_NE(model, nullptr);
  for (const bool fast : {false, true}) {
    kernels::SetFastDot(fast);
    for (const int threads : {2, 3}) {
      for (const kv::KvDType dtype : {kv::KvDType::kF32, kv::KvDType::kF16}) {
        core::ThreadPool pool(threads);
        Forward team(*model, &pool), passes(*model, &pool, PassByPass());
        kv::BlockPool blocks(team.KvGeometryFor(dtype, 16), 256);
        kv::SequenceKv a(&blocks), b(&blocks);
        // 40 steps from 23 tokens: the KV crosses block boundaries (16 tokens) mid-way.
        const auto got = TeamDecode(team, blocks, &a, 40);
        const auto want = TeamDecode(passes, blocks, &b, 40);
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t s = 0; s < got.size(); ++s) {
          EXPECT_TRUE(TeamSameBits(got[s], want[s])) << "step " << s << " threads " << threads
                                                 << " fast " << fast << " f16 kv "
                                                 << (dtype == kv::KvDType::kF16);
        }
        EXPECT_TRUE(TeamSameKv(a, b));
      }
    }
  }
  kernels::SetFastDot(false);
}

// Past core::LaneShares' window the passes' lanes are sized by the threads' waits (no longer
// split evenly): the steps still equal pass by pass bit for bit.
TEST_P(ForwardTeamTest, DecodeStepsEqualPassByPassOnceTheLanesFollowTheWaits) {
  const auto model = MakeTeamModel(GetParam().preset, GetParam().type);
  ASSERT_NE(model, nullptr);
  kernels::SetFastDot(true);
  core::ThreadPool pool(2);
  Forward team(*model, &pool), passes(*model, &pool, PassByPass());
  kv::BlockPool blocks(team.KvGeometryFor(kv::KvDType::kF16, 16), 256);
  kv::SequenceKv a(&blocks), b(&blocks);
  const int steps = core::LaneShares::kWindow + 40;
  const auto got = TeamDecode(team, blocks, &a, steps);
  const auto want = TeamDecode(passes, blocks, &b, steps);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t s = 0; s < got.size(); ++s)
    EXPECT_TRUE(TeamSameBits(got[s], want[s])) << "step " << s;
  EXPECT_TRUE(TeamSameKv(a, b));
  kernels::SetFastDot(false);
}

// Another thread holds the pool for the whole step: the team step's job runs inline on the
// caller, which then takes every stage alone.
TEST_P(ForwardTeamTest, BusyPoolRunsTheStepOnTheCallerAlone) {
  const auto model = MakeTeamModel(GetParam().preset, GetParam().type);
  ASSERT_NE(model, nullptr);
  core::ThreadPool pool(2);
  Forward team(*model, &pool), passes(*model, &pool, PassByPass());
  kv::BlockPool blocks(team.KvGeometryFor(kv::KvDType::kF32, 16), 128);
  kv::SequenceKv a(&blocks), b(&blocks);
  const auto want = TeamDecode(passes, blocks, &b, 3);

  std::atomic<bool> holding{false}, release{false};
  std::thread holder([&] {
    pool.ForEachChunk(2, [&](std::int64_t) {
      holding.store(true);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (!release.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    });
  });
  while (!holding.load()) std::this_thread::yield();
  const auto got = TeamDecode(team, blocks, &a, 3);
  release.store(true);
  holder.join();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t s = 0; s < got.size(); ++s) EXPECT_TRUE(TeamSameBits(got[s], want[s])) << "step " << s;
  EXPECT_TRUE(TeamSameKv(a, b));
}

INSTANTIATE_TEST_SUITE_P(Archs, ForwardTeamTest,
                         ::testing::Values(TeamCase{"tiny", gguf::GgmlType::kF32},
                                           TeamCase{"tiny", gguf::GgmlType::kQ8_0},
                                           TeamCase{"tiny-qwen2", gguf::GgmlType::kQ8_0},
                                           TeamCase{"tiny-qwen3", gguf::GgmlType::kF16},
                                           TeamCase{"tiny-phi3", gguf::GgmlType::kF32}),
                         [](const auto& info) {
                           std::string s = std::string(info.param.preset) + "_" +
                                           std::string(gguf::GetTypeInfo(info.param.type).name);
                           for (char& ch : s) if (ch == '-') ch = '_';
                           return s;
                         });

}  // namespace
}  // namespace smartgen::model
