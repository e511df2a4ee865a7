// Attention: decode (one token's 3 query heads of a GQA group against 4096 cached keys, in
// cache, and streamed from memory over 96 such KV sets laid out as kv::BlockPool stores them)
// and causal prefill (a chunk of tokens against itself), f32 and f16 KV, per ISA.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "bench_util.h"
#include "core/page_buffer.h"
#include "kernels/attention.h"
#include "kernels/fp16.h"
#include "kernels/kernel_table.h"

namespace smartgen::bench {
namespace {

using kernels::AttentionParams;
using kernels::KvBlockRef;
using kernels::KvDType;
using kernels::internal::Isa;

struct Kv {
  std::vector<std::byte> k, v;
  std::vector<KvBlockRef> blocks;
};

Kv MakeKv(KvDType dtype, std::int64_t n_keys, int block) {
  Kv kv;
  const std::size_t elem = kernels::KvDTypeSize(dtype);
  std::vector<float> kf = RandomFloats(n_keys * kHeadDim, 5),
                     vf = RandomFloats(n_keys * kHeadDim, 6);
  kv.k.resize(kf.size() * elem);
  kv.v.resize(vf.size() * elem);
  for (std::size_t i = 0; i < kf.size(); ++i) {
    if (dtype == KvDType::kF32) {
      reinterpret_cast<float*>(kv.k.data())[i] = kf[i];
      reinterpret_cast<float*>(kv.v.data())[i] = vf[i];
    } else {
      reinterpret_cast<kernels::f16_t*>(kv.k.data())[i] = kernels::F32ToF16(kf[i]);
      reinterpret_cast<kernels::f16_t*>(kv.v.data())[i] = kernels::F32ToF16(vf[i]);
    }
  }
  for (std::int64_t t = 0; t < n_keys; t += block) {
    const std::size_t off = t * kHeadDim * elem;
    kv.blocks.push_back({kv.k.data() + off, kv.v.data() + off,
                         static_cast<std::int32_t>(std::min<std::int64_t>(block, n_keys - t)), t});
  }
  return kv;
}

// The same keys and values laid out as kv::BlockPool stores them: each block's K rows, then its
// V rows, then the next block (page-sized blocks at 16 x 64 f16), at `at` in an arena of whole
// pages (core::PageBuffer, as the pool's chunks: a malloc'd vector starts 16 bytes into a page,
// which splits rows across cache lines that the pool's never do). `kv.k` stays empty.
Kv MakePoolKv(KvDType dtype, std::int64_t n_keys, int block, std::byte* at) {
  Kv split = MakeKv(dtype, n_keys, block);
  Kv kv;
  const std::size_t half = static_cast<std::size_t>(block) * kHeadDim * kernels::KvDTypeSize(dtype);
  for (const KvBlockRef& b : split.blocks) {
    const std::size_t n =
        static_cast<std::size_t>(b.n_tokens) * kHeadDim * kernels::KvDTypeSize(dtype);
    std::memcpy(at, b.k, n);
    std::memcpy(at + half, b.v, n);
    kv.blocks.push_back({at, at + half, b.n_tokens, b.first_pos});
    at += 2 * half;
  }
  return kv;
}

AttentionParams Params(KvDType dtype) {
  return {.head_dim = static_cast<int>(kHeadDim),
          .n_q = static_cast<int>(kNq),
          .scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim)),
          .dtype = dtype};
}

void BM_AttendBlocks(benchmark::State& state, KvDType dtype, Isa isa) {
  const auto* table = kernels::internal::GetKernelTable(isa);
  if (table == nullptr) return state.SkipWithError("ISA not available");
  const std::int64_t n_keys = state.range(0);
  Kv kv = MakeKv(dtype, n_keys, 16);
  const AttentionParams p = Params(dtype);
  std::vector<float> q = RandomFloats(kNq * kHeadDim, 7), out(kNq * kHeadDim), lse(kNq);
  for (auto _ : state) {
    table->attend_blocks(p, q.data(), n_keys, kv.blocks.data(), kv.blocks.size(), out.data(),
                         lse.data());
    benchmark::DoNotOptimize(out.data());
  }
  const double bytes = static_cast<double>(kv.k.size() + kv.v.size());
  state.counters["GB/s"] =
      benchmark::Counter(bytes * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(
      4.0 * kNq * kHeadDim * n_keys * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

// A decode step's attention over one sequence at long context as the engine runs it: every
// (layer, KV head) has its own 4096-key KV (96 sets, 96 MiB in f16), attended in turn, so the
// blocks come from memory, not cache (the bandwidth-bound case of a long-context decode batch).
void BM_AttendBlocksStream(benchmark::State& state, KvDType dtype, Isa isa) {
  const auto* table = kernels::internal::GetKernelTable(isa);
  if (table == nullptr) return state.SkipWithError("ISA not available");
  const std::int64_t n_keys = state.range(0);
  constexpr int kSets = 96;
  const std::size_t set_bytes = static_cast<std::size_t>((n_keys + 15) / 16 * 16) * kHeadDim *
                                kernels::KvDTypeSize(dtype) * 2;
  core::PageBuffer arena(set_bytes * kSets);
  std::vector<Kv> sets;
  for (int i = 0; i < kSets; ++i) {
    sets.push_back(MakePoolKv(dtype, n_keys, 16, arena.data() + set_bytes * i));
  }
  const AttentionParams p = Params(dtype);
  std::vector<float> q = RandomFloats(kNq * kHeadDim, 7), out(kNq * kHeadDim), lse(kNq);
  for (auto _ : state) {
    for (const Kv& kv : sets) {
      table->attend_blocks(p, q.data(), n_keys, kv.blocks.data(), kv.blocks.size(), out.data(),
                           lse.data());
      benchmark::DoNotOptimize(out.data());
    }
  }
  const double bytes = static_cast<double>(set_bytes) * kSets;
  state.counters["GB/s"] =
      benchmark::Counter(bytes * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

void BM_AttendCausal(benchmark::State& state, KvDType dtype, Isa isa) {
  const auto* table = kernels::internal::GetKernelTable(isa);
  if (table == nullptr) return state.SkipWithError("ISA not available");
  const std::int64_t n = state.range(0);
  Kv kv = MakeKv(dtype, n, 16);
  const AttentionParams p = Params(dtype);
  std::vector<float> q = RandomFloats(n * kNq * kHeadDim, 7), out(n * kNq * kHeadDim), lse(n * kNq);
  for (auto _ : state) {
    table->attend_causal(p, q.data(), kNq * kHeadDim, n, 0, kv.blocks.data(), kv.blocks.size(),
                         out.data(), kNq * kHeadDim, lse.data());
    benchmark::DoNotOptimize(out.data());
  }
  // QK and PV over the causal half: 2 * 2 * n^2/2 * head_dim per query head.
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * kNq * kHeadDim * static_cast<double>(n) * n * state.iterations() / 1e9,
      benchmark::Counter::kIsRate);
}

// How the forward pass calls it: a 32-token query tile at the end of an n-token prompt.
void BM_AttendCausalTile(benchmark::State& state, KvDType dtype, Isa isa) {
  const auto* table = kernels::internal::GetKernelTable(isa);
  if (table == nullptr) return state.SkipWithError("ISA not available");
  const std::int64_t n = state.range(0), tile = 32;
  Kv kv = MakeKv(dtype, n, 16);
  const AttentionParams p = Params(dtype);
  std::vector<float> q = RandomFloats(tile * kNq * kHeadDim, 7), out(tile * kNq * kHeadDim);
  for (auto _ : state) {
    table->attend_causal(p, q.data(), kNq * kHeadDim, tile, n - tile, kv.blocks.data(),
                         kv.blocks.size(), out.data(), kNq * kHeadDim, nullptr);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      4.0 * kNq * kHeadDim * static_cast<double>(n - tile / 2) * tile * state.iterations() / 1e9,
      benchmark::Counter::kIsRate);
}

[[maybe_unused]] const bool kAttentionRegistered = [] {
  for (KvDType dtype : {KvDType::kF32, KvDType::kF16}) {
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
      const std::string suffix = std::string(dtype == KvDType::kF16 ? "f16" : "f32") + "/" +
                                 kernels::internal::IsaName(isa);
      benchmark::RegisterBenchmark(("BM_AttendBlocks/" + suffix).c_str(), BM_AttendBlocks, dtype,
                                   isa)
          ->Arg(64)
          ->Arg(4096)
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("BM_AttendBlocksStream/" + suffix).c_str(),
                                   BM_AttendBlocksStream, dtype, isa)
          ->Arg(64)
          ->Arg(4096)
          ->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("BM_AttendCausal/" + suffix).c_str(), BM_AttendCausal, dtype,
                                   isa)
          ->Arg(isa == Isa::kScalar ? 256 : 1024)
          ->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("BM_AttendCausalTile32/" + suffix).c_str(), BM_AttendCausalTile,
                                   dtype, isa)
          ->Arg(4096)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  return true;
}();

}  // namespace
}  // namespace smartgen::bench
