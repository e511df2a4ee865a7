// GEMV (decode) and GEMM (prefill) at the SmolLM2-135M shapes, per weight type and ISA, and
// OpenBLAS sgemm for comparison. Counters: GB/s of weights streamed (GEMV), GFLOP/s (GEMM).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "core/page_buffer.h"
#include "core/thread_pool.h"
#include "gguf/ggml_type.h"
#include "kernels/kernel_table.h"
#include "kernels/matmul.h"
#include "kernels/q5_0_groups.h"
#include "kernels/q8_0_groups.h"
#include "kernels/read_bandwidth.h"

#if defined(SMARTGEN_BENCH_OPENBLAS)
#include <cblas.h>
#endif

namespace smartgen::bench {
namespace {

using gguf::GgmlType;
using kernels::internal::Isa;

// Types that fit the SmolLM2 shapes (576 columns: blocks of 32, not 256).
constexpr GgmlType kTypes[] = {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0,
                               GgmlType::kQ4_0};
constexpr GgmlType kAllTypes[] = {
    GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ8_0,   GgmlType::kQ4_0,
    GgmlType::kQ4_K, GgmlType::kQ6_K, GgmlType::kQ4_1, GgmlType::kQ5_0,   GgmlType::kQ5_1,
    GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ5_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS};

core::ThreadPool* Pool(int threads) {
  static core::ThreadPool pool2(2);
  return threads == 2 ? &pool2 : nullptr;
}

// One whole decode token's weight stream: every matrix of 30 layers plus the output head,
// each a distinct buffer, so nothing stays in cache (as in a real decode step).
void BM_DecodeWeights(benchmark::State& state, GgmlType type, Isa isa, int threads, bool fast_dot) {
  const auto* table = kernels::internal::GetKernelTable(isa);
  if (table == nullptr) return state.SkipWithError("ISA not available");
  kernels::SetFastDot(fast_dot);
  kernels::internal::PrepareActFn prepare = nullptr;
  if (fast_dot && kernels::internal::FastDotKernel(*table, type) == nullptr &&
      kernels::internal::FastDotActKernel(*table, type, &prepare) == nullptr) {
    kernels::SetFastDot(false);
    return state.SkipWithError("no fast-dot kernel for this type on this CPU");
  }
  std::vector<std::vector<std::byte>> mats;
  std::vector<MatShape> shapes;
  for (int l = 0; l < kLayers; ++l) {
    for (const MatShape& s : kLayerMats) {
      mats.push_back(RandomWeights(type, s.rows, s.cols, 100 + l));
      shapes.push_back(s);
    }
  }
  mats.push_back(RandomWeights(type, kVocab, kEmbd, 7));
  shapes.push_back({"output", kVocab, kEmbd});
  std::vector<float> x = RandomFloats(kFfn, 1), y(kVocab);
  std::size_t bytes = 0;
  for (const auto& m : mats) bytes += m.size();
  for (auto _ : state) {
    for (std::size_t i = 0; i < mats.size(); ++i) {
      kernels::internal::MatVecWith(*table, type, mats[i].data(), shapes[i].rows, shapes[i].cols,
                                    x.data(), y.data(), Pool(threads));
    }
    benchmark::DoNotOptimize(y.data());
  }
  kernels::SetFastDot(false);
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes) * state.iterations() / 1e9,
                                              benchmark::Counter::kIsRate);
  state.counters["tok/s"] = benchmark::Counter(state.iterations(), benchmark::Counter::kIsRate);
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
}

// GEMV over 96 distinct 1536 x 1536 matrices (columns a multiple of 256, so every type fits):
// the weight-streaming rate of each type's decode kernel, to set against BM_ReadBandwidth.
void BM_GemvStream(benchmark::State& state, GgmlType type, Isa isa, int threads, bool fast_dot) {
  const auto* table = kernels::internal::GetKernelTable(isa);
  if (table == nullptr) return state.SkipWithError("ISA not available");
  kernels::SetFastDot(fast_dot);
  kernels::internal::PrepareActFn prepare = nullptr;
  if (fast_dot && kernels::internal::FastDotKernel(*table, type) == nullptr &&
      kernels::internal::FastDotActKernel(*table, type, &prepare) == nullptr) {
    kernels::SetFastDot(false);
    return state.SkipWithError("no fast-dot kernel for this type on this CPU");
  }
  constexpr std::int64_t kDim = 1536;
  constexpr int kMats = 96;
  std::vector<std::vector<std::byte>> mats;
  for (int i = 0; i < kMats; ++i) mats.push_back(RandomWeights(type, kDim, kDim, 200 + i));
  std::vector<float> x = RandomFloats(kDim, 1), y(kDim);
  std::size_t bytes = 0;
  for (const auto& m : mats) bytes += m.size();
  for (auto _ : state) {
    for (const auto& m : mats) {
      kernels::internal::MatVecWith(*table, type, m.data(), kDim, kDim, x.data(), y.data(),
                                    Pool(threads));
    }
    benchmark::DoNotOptimize(y.data());
  }
  kernels::SetFastDot(false);
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes) * state.iterations() / 1e9,
                                              benchmark::Counter::kIsRate);
  state.counters["Gweights/s"] = benchmark::Counter(
      static_cast<double>(kDim * kDim * kMats) * state.iterations() / 1e9,
      benchmark::Counter::kIsRate);
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
}

// GEMV over one 128 x cols matrix that stays in cache: each type's compute rate (Gweights/s),
// the ceiling its decode kernel would hit with infinite memory bandwidth. Columns: 576
// (SmolLM2-135M's hidden size: 18 blocks of 32, rows that end in a part group), 896 (Qwen2.5-0.5B)
// and 1536 (a multiple of 256, so every type runs).
// grouped: Q5_0 rows regrouped as a loaded model's on a VNNI CPU (kernels/q5_0_groups.h).
void BM_GemvHot(benchmark::State& state, GgmlType type, Isa isa, bool fast_dot, bool grouped) {
  const auto* table = kernels::internal::GetKernelTable(isa);
  if (table == nullptr) return state.SkipWithError("ISA not available");
  kernels::SetFastDot(fast_dot);
  kernels::internal::PrepareActFn prepare = nullptr;
  if (fast_dot && kernels::internal::FastDotKernel(*table, type) == nullptr &&
      kernels::internal::FastDotActKernel(*table, type, &prepare) == nullptr) {
    kernels::SetFastDot(false);
    return state.SkipWithError("no fast-dot kernel for this type on this CPU");
  }
  constexpr std::int64_t kRows = 128;
  const std::int64_t kCols = state.range(0);
  if (kCols % gguf::GetTypeInfo(type).block_size != 0) {
    kernels::SetFastDot(false);
    return state.SkipWithError("columns not a multiple of the type's block");
  }
  std::vector<std::byte> w = RandomWeights(type, kRows, kCols, 5);
  kernels::WeightLayout layout = kernels::WeightLayout::kFile;
  if (grouped && type == GgmlType::kQ5_0) {
    kernels::GroupQ5_0Rows(w.data(), kRows, kCols);
    layout = kernels::WeightLayout::kQ5_0Groups;
  }
  if (grouped && type == GgmlType::kQ8_0) {
    kernels::GroupQ8_0Rows(w.data(), kRows, kCols);
    layout = kernels::WeightLayout::kQ8_0Groups;
  }
  const kernels::WeightView view{type, w.data(), kRows, kCols, layout};
  std::vector<float> x = RandomFloats(kCols, 1), y(kRows);
  const kernels::MatJob job{&view, x.data(), y.data()};
  for (auto _ : state) {
    kernels::internal::MatMulManyWith(*table, {&job, 1}, 1, nullptr);
    benchmark::DoNotOptimize(y.data());
  }
  kernels::SetFastDot(false);
  state.counters["Gweights/s"] = benchmark::Counter(
      static_cast<double>(kRows * kCols) * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

// One prefill chunk of n tokens through the matrices of one layer (x30 for the model figure).
void BM_PrefillLayer(benchmark::State& state, GgmlType type, Isa isa, int threads) {
  const auto* table = kernels::internal::GetKernelTable(isa);
  if (table == nullptr) return state.SkipWithError("ISA not available");
  const std::int64_t n = state.range(0);
  std::vector<std::vector<std::byte>> mats;
  for (const MatShape& s : kLayerMats) mats.push_back(RandomWeights(type, s.rows, s.cols, 3));
  std::vector<float> x = RandomFloats(n * kFfn, 2), y(n * kFfn);
  double flops = 0;
  for (const MatShape& s : kLayerMats) flops += 2.0 * s.rows * s.cols * n;
  for (auto _ : state) {
    for (std::size_t i = 0; i < mats.size(); ++i) {
      const MatShape& s = kLayerMats[i];
      kernels::internal::MatMulWith(*table, type, mats[i].data(), s.rows, s.cols, x.data(), n,
                                    y.data(), Pool(threads));
    }
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  // Matmul-only prefill rate of the 30-layer model (no attention, no output head).
  state.counters["model_tok/s"] = benchmark::Counter(
      static_cast<double>(n) * state.iterations() / kLayers, benchmark::Counter::kIsRate);
}

// A single GEMM shape (rows x cols weights, n tokens).
void BM_MatMul(benchmark::State& state, GgmlType type, Isa isa, int threads) {
  const auto* table = kernels::internal::GetKernelTable(isa);
  if (table == nullptr) return state.SkipWithError("ISA not available");
  const std::int64_t rows = state.range(0), cols = state.range(1), n = state.range(2);
  std::vector<std::byte> w = RandomWeights(type, rows, cols, 3);
  std::vector<float> x = RandomFloats(n * cols, 2), y(n * rows);
  for (auto _ : state) {
    kernels::internal::MatMulWith(*table, type, w.data(), rows, cols, x.data(), n, y.data(),
                                  Pool(threads));
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * rows * cols * n * state.iterations() / 1e9,
                                                 benchmark::Counter::kIsRate);
}

#if defined(SMARTGEN_BENCH_OPENBLAS)
void BM_OpenBlasPrefillLayer(benchmark::State& state, int threads) {
  openblas_set_num_threads(threads);
  const std::int64_t n = state.range(0);
  std::vector<std::vector<float>> mats;
  for (const MatShape& s : kLayerMats) mats.push_back(RandomFloats(s.rows * s.cols, 3));
  std::vector<float> x = RandomFloats(n * kFfn, 2), y(n * kFfn);
  double flops = 0;
  for (const MatShape& s : kLayerMats) flops += 2.0 * s.rows * s.cols * n;
  for (auto _ : state) {
    for (std::size_t i = 0; i < mats.size(); ++i) {
      const MatShape& s = kLayerMats[i];
      // Y[n][rows] = X[n][cols] W^T
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, s.rows, s.cols, 1.0f, x.data(),
                  s.cols, mats[i].data(), s.cols, 0.0f, y.data(), s.rows);
    }
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  state.counters["model_tok/s"] = benchmark::Counter(
      static_cast<double>(n) * state.iterations() / kLayers, benchmark::Counter::kIsRate);
}

void BM_OpenBlasMatMul(benchmark::State& state, int threads) {
  openblas_set_num_threads(threads);
  const std::int64_t rows = state.range(0), cols = state.range(1), n = state.range(2);
  std::vector<float> w = RandomFloats(rows * cols, 3);
  std::vector<float> x = RandomFloats(n * cols, 2), y(n * rows);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, rows, cols, 1.0f, x.data(), cols,
                w.data(), cols, 0.0f, y.data(), rows);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * rows * cols * n * state.iterations() / 1e9,
                                                 benchmark::Counter::kIsRate);
}
#endif

// Where a decode token's stream falls short of the read-bandwidth probe: the weight bytes of one
// Qwen2.5-0.5B token (24 layers of q, k, v, o, gate, up, down, then the 151936-row output head),
// on huge pages like the engine's, read three ways: mode 0 a GEMV pass per matrix (the decode
// kernels, two threads), mode 1 the same bytes as one matrix (the kernel without the passes),
// mode 2 the same bytes summed by the probe's loop in two halves (neither). Counter "probe": the
// probe (kernels::MeasureReadBandwidth) right after. Nothing of the model's compute but the GEMVs.
void BM_QwenTokenStream(benchmark::State& state, GgmlType type) {
  const auto* table = kernels::internal::GetKernelTable(Isa::kAvx512);
  if (table == nullptr) return state.SkipWithError("ISA not available");
  kernels::SetFastDot(true);
  struct Mat {
    std::int64_t rows, cols;
  };
  std::vector<Mat> mats;
  for (int l = 0; l < 24; ++l) {
    for (const Mat m : {Mat{896, 896}, Mat{128, 896}, Mat{128, 896}, Mat{896, 896}, Mat{4864, 896},
                        Mat{4864, 896}, Mat{896, 4864}}) {
      mats.push_back(m);
    }
  }
  mats.push_back({151936, 896});
  std::size_t bytes = 0;
  for (const Mat& m : mats) bytes += gguf::RowBytes(type, m.cols) * m.rows;
  const std::int64_t mode = state.range(0);
  if (mode == 1) {
    const auto rows = static_cast<std::int64_t>(bytes / gguf::RowBytes(type, 896));
    mats.assign(1, Mat{rows, 896});
  }
  core::PageBuffer buf(bytes);
  buf.Prefault();  // zero weights: the kernels' speed does not depend on the values
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  const std::size_t chunks = bytes / kChunk;
  std::int64_t most_rows = 0;
  for (const Mat& m : mats) most_rows = std::max(most_rows, m.rows);
  std::vector<float> x = RandomFloats(4864, 1), sink(chunks);
  std::vector<float> y(static_cast<std::size_t>(most_rows));
  for (auto _ : state) {
    if (mode == 2) {
      Pool(2)->ForEachChunk(2, [&](std::int64_t half) {
        for (std::size_t c = half * chunks / 2; c < (half + 1) * chunks / 2; ++c) {
          const auto* p = reinterpret_cast<const float*>(buf.data() + c * kChunk);
          sink[c] = kernels::StreamSum(p, kChunk / sizeof(float));
        }
      });
    } else {
      std::size_t at = 0;
      for (const Mat& m : mats) {
        kernels::internal::MatVecWith(*table, type, buf.data() + at, m.rows, m.cols, x.data(),
                                      y.data(), Pool(2));
        at += gguf::RowBytes(type, m.cols) * m.rows;
      }
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::DoNotOptimize(sink.data());
  }
  kernels::SetFastDot(false);
  const double streamed = static_cast<double>(mode == 2 ? chunks / 2 * 2 * kChunk : bytes);
  state.counters["GB/s"] =
      benchmark::Counter(streamed * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  state.counters["probe"] = kernels::MeasureReadBandwidth(Pool(2), std::size_t{1} << 30, 3);
}

// One core's decode kernel against one core's probe loop on the same bytes, in turns: the kernel
// factor of the floor share with no passes, no second thread and no placement difference (a 256
// MiB matrix on huge pages, 896 columns, 4864 for the 256-wide blocks; zero weights). Each turn
// times kernels::StreamSum over the buffer and then the GEMV over it in chunks of about the
// argument's KiB, one after another, as a decode pass hands a thread its lane: 1024 as a big
// matrix's chunks, 128 and 48 as SmolLM2-135M's (its passes' chunks are 40-240 KiB). Where the
// type has a kernel on prepared activations (Q8_0 and the other VNNI types), the activations are
// prepared once per turn, as a pass prepares them once for all its chunks; `ratio` is the median
// over the turns of the GEMV's GB/s over the probe loop's (quartiles q1, q3).
void BM_GemvOneCore(benchmark::State& state, GgmlType type) {
  const auto* table = kernels::internal::GetKernelTable(Isa::kAvx512);
  if (table == nullptr) return state.SkipWithError("ISA not available");
  kernels::SetFastDot(true);
  const std::int64_t cols = gguf::GetTypeInfo(type).block_size == 256 ? 4864 : 896;
  const std::size_t row_bytes = gguf::RowBytes(type, cols);
  const auto rows = static_cast<std::int64_t>((std::size_t{256} << 20) / row_bytes);
  const std::size_t matrix_bytes = row_bytes * static_cast<std::size_t>(rows);
  const std::size_t probe_bytes = matrix_bytes / 256 * 256;  // StreamSum's step
  const std::int64_t chunk_rows = std::max<std::int64_t>(
      16, static_cast<std::int64_t>((static_cast<std::size_t>(state.range(0)) << 10) / row_bytes) /
              16 * 16);
  kernels::internal::PrepareActFn prepare = nullptr;
  const kernels::internal::MatVecActFn act_kernel =
      kernels::internal::FastDotActKernel(*table, type, &prepare);
  core::PageBuffer buf(matrix_bytes);
  buf.Prefault();
  const std::vector<float> x = RandomFloats(static_cast<std::size_t>(cols), 1);
  std::vector<float> y(static_cast<std::size_t>(rows));
  const auto blocks = static_cast<std::size_t>(cols / 32);
  std::vector<std::int8_t> q(static_cast<std::size_t>(cols));
  std::vector<std::uint8_t> qabs(static_cast<std::size_t>(cols));
  std::vector<std::uint32_t> qneg(blocks);
  std::vector<float> d(blocks), sum8(blocks);
  const kernels::internal::ActQ8 act{q.data(), qabs.data(), qneg.data(), d.data(), sum8.data()};
  std::vector<double> ratios;
  double probe_s = 0, gemv_s = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(kernels::StreamSum(reinterpret_cast<const float*>(buf.data()),
                                                probe_bytes / sizeof(float)));
    const auto t1 = std::chrono::steady_clock::now();
    if (act_kernel != nullptr)
      prepare(x.data(), cols, q.data(), qabs.data(), qneg.data(), d.data(), sum8.data());
    for (std::int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {  // the engine's chunks
      const std::int64_t r1 = std::min(rows, r0 + chunk_rows);
      if (act_kernel != nullptr) {
        act_kernel(buf.data(), row_bytes, cols, act, y.data(), r0, r1);
      } else {
        kernels::internal::MatVecWith(*table, type, buf.data() + r0 * row_bytes, r1 - r0, cols,
                                      x.data(), y.data() + r0, nullptr);
      }
    }
    const auto t2 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(y.data());
    const double dp = std::chrono::duration<double>(t1 - t0).count();
    const double dg = std::chrono::duration<double>(t2 - t1).count();
    probe_s += dp;
    gemv_s += dg;
    ratios.push_back((static_cast<double>(matrix_bytes) / dg) /
                     (static_cast<double>(probe_bytes) / dp));
  }
  kernels::SetFastDot(false);
  const auto turns = static_cast<double>(ratios.size());
  state.counters["probe_GB/s"] = static_cast<double>(probe_bytes) * turns / probe_s / 1e9;
  state.counters["gemv_GB/s"] = static_cast<double>(matrix_bytes) * turns / gemv_s / 1e9;
  SetRatioCounters(state, ratios);
}

const Isa kIsas[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvx512};

[[maybe_unused]] const bool kMatmulRegistered = [] {
  for (GgmlType type : kTypes) {
    for (Isa isa : kIsas) {
      for (int threads : {1, 2}) {
        const std::string suffix = std::string(TypeName(type)) + "/" +
                                   kernels::internal::IsaName(isa) +
                                   "/threads:" + std::to_string(threads);
        if (isa != Isa::kScalar) {
          for (const bool fast : {false, true}) {
            if (fast && isa != Isa::kAvx512) continue;
            benchmark::RegisterBenchmark(
                ("BM_DecodeWeights/" + suffix + (fast ? "/fast-dot" : "")).c_str(),
                BM_DecodeWeights, type, isa, threads, fast)
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
          }
        }
        if (isa != Isa::kScalar || threads == 1) {
          benchmark::RegisterBenchmark(("BM_PrefillLayer/" + suffix).c_str(), BM_PrefillLayer, type,
                                       isa, threads)
              ->Arg(isa == Isa::kScalar ? 16 : 512)
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime();
        }
        if (isa != Isa::kScalar) {
          benchmark::RegisterBenchmark(("BM_MatMul/" + suffix).c_str(), BM_MatMul, type, isa,
                                       threads)
              ->Args({kFfn, kEmbd, 512})
              ->Args({kEmbd, kFfn, 512})
              ->Args({kFfn, kEmbd, 4096})
              ->Args({kEmbd, kFfn, 4096})
              ->Args({kEmbd, kEmbd, 64})
              ->Args({kFfn, kEmbd, 16})
              ->Args({kFfn, kEmbd, 8})
              ->Args({kFfn, kEmbd, 4})
              ->Args({kEmbd, kEmbd, 2})
              ->Unit(benchmark::kMicrosecond)
              ->UseRealTime();
        }
      }
    }
  }
  for (GgmlType type : kAllTypes) {
    for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
      for (const bool fast : {false, true}) {
        const bool plain = type == GgmlType::kF32 || type == GgmlType::kF16;
        if (fast && (plain || (isa == Isa::kAvx2 && type == GgmlType::kBF16))) continue;
        benchmark::RegisterBenchmark(("BM_GemvHot/" + std::string(TypeName(type)) + "/" +
                                      kernels::internal::IsaName(isa) + (fast ? "/fast-dot" : ""))
                                         .c_str(),
                                     BM_GemvHot, type, isa, fast, false)
            ->Arg(576)
            ->Arg(896)
            ->Arg(1536)
            ->Unit(benchmark::kMicrosecond);
        if ((type == GgmlType::kQ5_0 || type == GgmlType::kQ8_0) && isa == Isa::kAvx512 && fast) {
          benchmark::RegisterBenchmark(
              ("BM_GemvHot/" + std::string(TypeName(type)) + "-groups/avx512/fast-dot").c_str(),
              BM_GemvHot, type, isa, fast, /*grouped=*/true)
              ->Arg(576)
              ->Arg(896)
              ->Arg(1536)
              ->Unit(benchmark::kMicrosecond);
        }
      }
      for (int threads : {1, 2}) {
        for (const bool fast : {false, true}) {
          if (fast && isa != Isa::kAvx512) continue;
          benchmark::RegisterBenchmark(("BM_GemvStream/" + std::string(TypeName(type)) + "/" +
                                        kernels::internal::IsaName(isa) +
                                        "/threads:" + std::to_string(threads) + (fast ? "/fast-dot" : ""))
                                           .c_str(),
                                       BM_GemvStream, type, isa, threads, fast)
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime();
        }
      }
    }
  }
  for (GgmlType type : {GgmlType::kF16, GgmlType::kQ8_0}) {
    benchmark::RegisterBenchmark(("BM_QwenTokenStream/" + std::string(TypeName(type))).c_str(),
                                 BM_QwenTokenStream, type)
        ->Arg(0)
        ->Arg(1)
        ->Arg(2)
        ->ArgName("mode")
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0,
                        GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kQ4_K, GgmlType::kQ6_K}) {
    AsPaired(benchmark::RegisterBenchmark(("BM_GemvOneCore/" + std::string(TypeName(type))).c_str(),
                                          BM_GemvOneCore, type)
                 ->Arg(1024)
                 ->Arg(128)
                 ->Arg(48)
                 ->ArgName("chunk_KiB"));
  }
#if defined(SMARTGEN_BENCH_OPENBLAS)
  for (int threads : {1, 2}) {
    benchmark::RegisterBenchmark(
        ("BM_OpenBlasPrefillLayer/f32/threads:" + std::to_string(threads)).c_str(),
        BM_OpenBlasPrefillLayer, threads)
        ->Arg(512)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(
        ("BM_OpenBlasMatMul/f32/threads:" + std::to_string(threads)).c_str(), BM_OpenBlasMatMul,
        threads)
        ->Args({kFfn, kEmbd, 512})
        ->Args({kEmbd, kFfn, 512})
        ->Args({kFfn, kEmbd, 4096})
        ->Args({kEmbd, kFfn, 4096})
        ->Args({kEmbd, kEmbd, 64})
        ->Args({kEmbd, kEmbd, 2})
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
#endif
  return true;
}();

}  // namespace
}  // namespace smartgen::bench
