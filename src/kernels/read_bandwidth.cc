#include "kernels/read_bandwidth.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/bytes.h"
#include "core/clock.h"
#include "core/cpu_features.h"
#include "core/page_buffer.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace smartgen::kernels {
namespace {

constexpr std::size_t kStreamChunkBytes = std::size_t{1} << 20;

// Sums n floats (n % 64 == 0) with four independent accumulators: the loads, not the adds,
// bound it. The result only keeps the loads from being optimised away.
#if defined(__x86_64__)
__attribute__((target("avx512f"))) float StreamSumAvx512(const float* p, std::size_t n) {
  __m512 a = _mm512_setzero_ps(), b = a, c = a, d = a;
  for (std::size_t i = 0; i < n; i += 64) {
    a = _mm512_add_ps(a, _mm512_load_ps(p + i));
    b = _mm512_add_ps(b, _mm512_load_ps(p + i + 16));
    c = _mm512_add_ps(c, _mm512_load_ps(p + i + 32));
    d = _mm512_add_ps(d, _mm512_load_ps(p + i + 48));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a, b), _mm512_add_ps(c, d)));
}
__attribute__((target("avx2"))) float StreamSumAvx2(const float* p, std::size_t n) {
  __m256 a = _mm256_setzero_ps(), b = a, c = a, d = a;
  for (std::size_t i = 0; i < n; i += 32) {
    a = _mm256_add_ps(a, _mm256_load_ps(p + i));
    b = _mm256_add_ps(b, _mm256_load_ps(p + i + 8));
    c = _mm256_add_ps(c, _mm256_load_ps(p + i + 16));
    d = _mm256_add_ps(d, _mm256_load_ps(p + i + 24));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d)));
  float s = 0;
  for (float v : lanes) s += v;
  return s;
}
#endif

float StreamSumPortable(const float* p, std::size_t n) {
  float part[8] = {};
  for (std::size_t i = 0; i < n; i += 8) {
    for (int j = 0; j < 8; ++j) part[j] += p[i + j];
  }
  float s = 0;
  for (float v : part) s += v;
  return s;
}

}  // namespace

float StreamSum(const float* p, std::size_t n) {
#if defined(__x86_64__)
  const core::CpuFeatures& f = core::GetCpuFeatures();
  if (f.HasAvx512()) return StreamSumAvx512(p, n);
  if (f.HasAvx2()) return StreamSumAvx2(p, n);
#endif
  return StreamSumPortable(p, n);
}

struct ReadBandwidthProbe::State {
  std::size_t n_chunks = 0;
  // On huge pages: a 1 GiB buffer on 4 KiB pages read again after a decode rep left it idle read
  // at 3-14 GB/s on a paravirtualised VM (docs/RESULTS.md, "First touch"), not at the memory's rate.
  core::PageBuffer buf;
  const float* data() const { return reinterpret_cast<const float*>(buf.data()); }
  std::vector<float> sink;
};

ReadBandwidthProbe::ReadBandwidthProbe(core::ThreadPool* pool, std::size_t bytes)
    : pool_(pool), state_(std::make_unique<State>()) {
  state_->n_chunks = std::max<std::size_t>(1, bytes / kStreamChunkBytes);
  state_->buf = core::PageBuffer(state_->n_chunks * kStreamChunkBytes);
  state_->buf.Prefault();  // real pages (reads of untouched memory all hit the one zero page)
  state_->sink.assign(state_->n_chunks, 0.0f);
}

ReadBandwidthProbe::~ReadBandwidthProbe() = default;

double ReadBandwidthProbe::Sample(int passes) {
  const std::size_t chunk_floats = kStreamChunkBytes / sizeof(float);
  State& st = *state_;
  auto pass = [&] {
    auto chunk = [&](std::int64_t c) {
      st.sink[static_cast<std::size_t>(c)] = StreamSum(st.data() + c * chunk_floats, chunk_floats);
    };
    if (pool_ == nullptr) {
      for (std::size_t c = 0; c < st.n_chunks; ++c) chunk(static_cast<std::int64_t>(c));
    } else {
      pool_->ForEachChunk(static_cast<std::int64_t>(st.n_chunks), chunk);
    }
  };
  std::vector<double> rates;
  for (int i = 0; i < std::max(1, passes); ++i) {
    const core::Nanos t0 = core::NowNanos();
    pass();
    const double s = core::ToSeconds(core::NowNanos() - t0);
    rates.push_back(static_cast<double>(st.n_chunks * kStreamChunkBytes) / s / 1e9);
  }
  std::sort(rates.begin(), rates.end());
  const std::size_t m = rates.size();
  return m % 2 == 1 ? rates[m / 2] : 0.5 * (rates[m / 2 - 1] + rates[m / 2]);
}

double MeasureReadBandwidth(core::ThreadPool* pool, std::size_t bytes, int passes) {
  ReadBandwidthProbe probe(pool, bytes);
  probe.Sample(1);  // the untimed pass: caches and TLBs as a stream leaves them
  return probe.Sample(passes);
}

}  // namespace smartgen::kernels
