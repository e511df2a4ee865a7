// kernels::TeamPass: a single-token pass whose chunks the threads of one pool job claim gives
// MatMulMany's and MatMulSwiGlu's / MatMulGeGlu's outputs bit for bit, on pools of two and three
// threads and on a thread alone, whatever the chunking (chunks per thread, own-lane runs), and
// reads its input only on threads that got a chunk.
#include "kernels/team_pass.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernel_test_util.h"
#include "kernels/matmul_pass.h"

namespace smartgen::kernels {
namespace {

using gguf::GgmlType;

const GgmlType kTeamTypes[] = {GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ8_0,
                           GgmlType::kQ4_0, GgmlType::kQ4_K, GgmlType::kQ6_K, GgmlType::kQ5_0};

bool TeamSameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Runs `pass` on every thread of `pool` as one job (or, pool null, on this thread alone) with
// input x; returns how many threads asked for the input.
int RunTeam(TeamPass& pass, core::ThreadPool* pool, const std::vector<float>& x) {
  std::atomic<int> inputs{0};
  auto body = [&](int, int) {
    pass.Work([&] {
      inputs.fetch_add(1);
      return x.data();
    });
    pass.Wait({});
  };
  if (pool == nullptr) {
    body(0, 1);
  } else {
    pool->Run(body);
  }
  EXPECT_TRUE(pass.Done());
  return inputs.load();
}

TEST(TeamPass, EqualsMatMulManyBitForBit) {
  std::mt19937 rng(21);
  for (const bool fast : {false, true}) {
    SetFastDot(fast);
    for (GgmlType type : kTeamTypes) {
      const std::int64_t cols = 512;  // whole blocks of every type (256 for the K-quants)
      // Three products of one input (q/k/v-like, row counts off the 16-row grain), and a
      // residual-style product added into its output.
      testing::Weights a = testing::MakeWeights(rng, type, 200, cols);
      testing::Weights b = testing::MakeWeights(rng, type, 33, cols);
      testing::Weights c = testing::MakeWeights(rng, type, 70, cols);
      const std::vector<float> x = testing::RandomVector(rng, cols);
      const std::vector<float> y0 = testing::RandomVector(rng, 70);
      std::vector<float> wa(200), wb(33), wc = y0;
      core::ThreadPool reference_pool(2);
      const MatJob want_jobs[] = {{&a.view, x.data(), wa.data()},
                                  {&b.view, x.data(), wb.data()},
                                  {&c.view, x.data(), wc.data(), /*accumulate=*/true}};
      MatMulMany(want_jobs, 1, &reference_pool);
      for (const int threads : {1, 2, 3}) {
        core::ThreadPool pool(threads);
        for (core::ThreadPool* p : {&pool, static_cast<core::ThreadPool*>(nullptr)}) {
          std::vector<float> ya(200, -1e30f), yb(33, -1e30f), yc = y0;
          const MatJob jobs[] = {{&a.view, nullptr, ya.data()},
                                 {&b.view, nullptr, yb.data()},
                                 {&c.view, nullptr, yc.data(), /*accumulate=*/true}};
          TeamPass pass;
          pass.Reset(jobs, threads);
          const int inputs = RunTeam(pass, p, x);
          EXPECT_GE(inputs, 1);
          EXPECT_LE(inputs, p == nullptr ? 1 : threads);
          EXPECT_TRUE(TeamSameBits(ya, wa) && TeamSameBits(yb, wb) && TeamSameBits(yc, wc))
              << gguf::GetTypeInfo(type).name << " fast " << fast << " threads " << threads
              << (p == nullptr ? " alone" : " pool");
          // Every chunk is taken: a thread that comes later neither runs one nor reads the input.
          bool asked = false;
          pass.Work([&] {
            asked = true;
            return x.data();
          });
          EXPECT_FALSE(asked);
        }
      }
    }
  }
  SetFastDot(false);
}

// Chunks per thread and own-lane runs (kernels::internal::SetVecChunking) change which thread
// computes which rows and in how many kernel calls, never a row's bits: a team pass and
// MatMulMany / MatMulSwiGlu on a pool give what one call over all rows on this thread gives.
TEST(TeamPass, EveryChunkingGivesOneCallsBits) {
  struct Chunking {
    int chunks_per_thread, max_run;
    std::size_t run_bytes;
  };
  const Chunking chunkings[] = {
      {internal::kVecChunksPerThread, internal::kVecMaxRun, internal::kVecRunBytes},
      {16, 16, SIZE_MAX},
      {32, 31, 128 << 10},
      {4, 1, SIZE_MAX},
      {1, 1, SIZE_MAX}};
  std::mt19937 rng(23);
  SetFastDot(true);
  for (GgmlType type : {GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ5_0}) {
    const std::int64_t cols = 512, rows = 1000, small = 40;
    testing::Weights a = testing::MakeWeights(rng, type, rows, cols);
    testing::Weights b = testing::MakeWeights(rng, type, small, cols);
    testing::Weights up = testing::MakeWeights(rng, type, rows, cols);
    const std::vector<float> x = testing::RandomVector(rng, cols);
    std::vector<float> wa(rows), wb(small), wg(rows);
    const MatJob want_jobs[] = {{&a.view, x.data(), wa.data()}, {&b.view, x.data(), wb.data()}};
    MatMulMany(want_jobs, 1, nullptr);
    MatMulSwiGlu(a.view, up.view, x.data(), 1, wg.data(), nullptr);
    core::ThreadPool pool(2);
    for (const Chunking& c : chunkings) {
      internal::SetVecChunking(c.chunks_per_thread, c.max_run, c.run_bytes);
      const std::string where = std::string(gguf::GetTypeInfo(type).name) + " chunks " +
                                std::to_string(c.chunks_per_thread) + " run " +
                                std::to_string(c.max_run);
      std::vector<float> ya(rows, -1e30f), yb(small, -1e30f), yg(rows, -1e30f);
      const MatJob jobs[] = {{&a.view, nullptr, ya.data()}, {&b.view, nullptr, yb.data()}};
      TeamPass pass;
      pass.Reset(jobs, pool.size());
      RunTeam(pass, &pool, x);
      EXPECT_TRUE(TeamSameBits(ya, wa) && TeamSameBits(yb, wb)) << "team " << where;
      TeamPass gated;
      gated.ResetGated(a.view, up.view, yg.data(), /*gelu=*/false, pool.size());
      RunTeam(gated, &pool, x);
      EXPECT_TRUE(TeamSameBits(yg, wg)) << "team gated " << where;
      std::vector<float> ma(rows, -1e30f), mb(small, -1e30f), mg(rows, -1e30f);
      const MatJob many[] = {{&a.view, x.data(), ma.data()}, {&b.view, x.data(), mb.data()}};
      MatMulMany(many, 1, &pool);
      MatMulSwiGlu(a.view, up.view, x.data(), 1, mg.data(), &pool);
      EXPECT_TRUE(TeamSameBits(ma, wa) && TeamSameBits(mb, wb) && TeamSameBits(mg, wg))
          << "pool " << where;
    }
  }
  internal::SetVecChunking(internal::kVecChunksPerThread, internal::kVecMaxRun,
                           internal::kVecRunBytes);
  SetFastDot(false);
}

TEST(TeamPass, GatedEqualsMatMulSwiGluAndGeGluBitForBit) {
  std::mt19937 rng(22);
  for (const bool fast : {false, true}) {
    SetFastDot(fast);
    for (GgmlType type : kTeamTypes) {
      const std::int64_t cols = 256, rows = 300;
      testing::Weights gate = testing::MakeWeights(rng, type, rows, cols);
      // up of another type where the two differ in a real file (Q4_K_M's gate Q4_K, up Q6_K).
      testing::Weights up = testing::MakeWeights(rng, type == GgmlType::kQ4_K ? GgmlType::kQ6_K : type, rows, cols);
      const std::vector<float> x = testing::RandomVector(rng, cols);
      for (const bool gelu : {false, true}) {
        std::vector<float> want(rows), got(rows, -1e30f);
        core::ThreadPool pool(2);
        if (gelu) {
          MatMulGeGlu(gate.view, up.view, x.data(), 1, want.data(), &pool);
        } else {
          MatMulSwiGlu(gate.view, up.view, x.data(), 1, want.data(), &pool);
        }
        TeamPass pass;
        pass.ResetGated(gate.view, up.view, got.data(), gelu, pool.size());
        RunTeam(pass, &pool, x);
        EXPECT_TRUE(TeamSameBits(got, want))
            << gguf::GetTypeInfo(type).name << " fast " << fast << " gelu " << gelu;
      }
    }
  }
  SetFastDot(false);
}

}  // namespace
}  // namespace smartgen::kernels
