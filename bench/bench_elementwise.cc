// Per-token element-wise kernels at SmolLM2 sizes, per ISA. Counter: GB/s touched.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench_util.h"
#include "kernels/kernel_table.h"
#include "kernels/rope.h"

namespace smartgen::bench {
namespace {

using kernels::internal::Isa;

void BM_RmsNorm(benchmark::State& state, Isa isa) {
  const auto* table = kernels::internal::GetKernelTable(isa);
  if (table == nullptr) return state.SkipWithError("ISA not available");
  std::vector<float> x = RandomFloats(kEmbd, 1), w = RandomFloats(kEmbd, 2), out(kEmbd);
  for (auto _ : state) {
    table->rms_norm(x.data(), w.data(), kEmbd, 1e-5f, out.data());
    benchmark::DoNotOptimize(out.data());
  }
}

void BM_SwiGlu(benchmark::State& state, Isa isa) {
  const auto* table = kernels::internal::GetKernelTable(isa);
  if (table == nullptr) return state.SkipWithError("ISA not available");
  std::vector<float> g = RandomFloats(kFfn, 1), u = RandomFloats(kFfn, 2), out(kFfn);
  for (auto _ : state) {
    table->swiglu(g.data(), u.data(), kFfn, out.data());
    benchmark::DoNotOptimize(out.data());
  }
}

void BM_Softmax(benchmark::State& state, Isa isa) {
  const auto* table = kernels::internal::GetKernelTable(isa);
  if (table == nullptr) return state.SkipWithError("ISA not available");
  std::vector<float> x0 = RandomFloats(kVocab, 1, 10.0f), x(kVocab);
  for (auto _ : state) {
    x = x0;
    benchmark::DoNotOptimize(table->softmax(x.data(), kVocab));
  }
}

void BM_Rope(benchmark::State& state, Isa isa) {
  const auto* table = kernels::internal::GetKernelTable(isa);
  if (table == nullptr) return state.SkipWithError("ISA not available");
  const kernels::RopeConfig c{.head_dim = 64, .n_rot = 64, .freq_base = 10000.0f};
  std::vector<float> x = RandomFloats(9 * 64, 1), cs = RandomFloats(32, 2),
                     sn = RandomFloats(32, 3);
  for (auto _ : state) {
    table->rope_apply(c, cs.data(), sn.data(), x.data(), 9);
    benchmark::DoNotOptimize(x.data());
  }
}

[[maybe_unused]] const bool kElementwiseRegistered = [] {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    const std::string s = kernels::internal::IsaName(isa);
    benchmark::RegisterBenchmark(("BM_RmsNorm/576/" + s).c_str(), BM_RmsNorm, isa);
    benchmark::RegisterBenchmark(("BM_SwiGlu/1536/" + s).c_str(), BM_SwiGlu, isa);
    benchmark::RegisterBenchmark(("BM_Softmax/49152/" + s).c_str(), BM_Softmax, isa);
    benchmark::RegisterBenchmark(("BM_RopeTables/9x64/" + s).c_str(), BM_Rope, isa);
  }
  return true;
}();

}  // namespace
}  // namespace smartgen::bench
