// The order in which a decode GEMV (one token) reads the rows of its chunk: as two sequential
// streams, a group of rows of the chunk's first half and then one of its second half, in turn,
// instead of one stream front to back. The weights are read once either way and every row's dot
// is the same, so results do not change; only the memory access pattern does.
//
// Why: one core's read rate from memory is bound by how many lines it has in flight, and a GEMV
// that spends a conversion and an FMA per 32 bytes keeps fewer of them in flight through one
// stream than a plain streaming read does (0.83-0.95 of it on one core of the AMD EPYC Zen 5 VM,
// bench_kernels' BM_GemvOneCore). Two streams a few KiB apart each keep their own hardware
// prefetch running, and with the software prefetch kTwoStreamPrefetchBytes ahead in each, one
// core's F16 and Q8_0 GEMVs read 0.93-1.09x the plain read's rate there (docs/RESULTS.md,
// issue 14).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "kernels/kernel_table.h"

namespace smartgen::kernels::internal {

// Bytes of one stream read before the GEMV turns to the other (whole rows, at least one).
inline constexpr std::size_t kStreamGroupBytes = std::size_t{5} << 10;
// How far ahead each of the two streams prefetches.
inline constexpr std::size_t kTwoStreamPrefetchBytes = 4096;
// A range of fewer bytes is read as one stream (by default: SetMinTwoStreamBytes).
inline constexpr std::size_t kMinTwoStreamBytes = std::size_t{128} << 10;

namespace detail {
inline std::atomic<std::size_t> min_two_stream_bytes{kMinTwoStreamBytes};
}  // namespace detail
// The smallest range read as two streams: kMinTwoStreamBytes unless changed, SIZE_MAX for one
// stream everywhere. For benchmarks that compare the orders in one process (bench_kernels'
// BM_RowStreams); not while a GEMV runs.
inline void SetMinTwoStreamBytes(std::size_t bytes) {
  detail::min_two_stream_bytes.store(bytes, std::memory_order_relaxed);
}

// Rows of row_bytes bytes per group of a stream (at least one).
inline std::int64_t StreamGroupRows(std::size_t row_bytes) {
  return static_cast<std::int64_t>(std::max<std::size_t>(
      1, (kStreamGroupBytes + row_bytes / 2) / std::max<std::size_t>(row_bytes, 1)));
}

// Whether ForEachRowTwoStreams reads `rows` rows of row_bytes bytes as two streams: not when
// they are fewer than two groups or than SetMinTwoStreamBytes' bytes.
inline bool ReadsTwoStreams(std::int64_t rows, std::size_t row_bytes) {
  const std::size_t min_bytes = detail::min_two_stream_bytes.load(std::memory_order_relaxed);
  return rows >= 2 * StreamGroupRows(row_bytes) &&
         static_cast<std::size_t>(rows) * row_bytes >= min_bytes;
}

// How far ahead a GEMV that reads `rows` rows in ForEachRowTwoStreams' order prefetches:
// kTwoStreamPrefetchBytes in each of two streams, kGemvPrefetchBytes in one (4 KiB there read
// SmolLM2-135M's small Q8_0 chunks 0.95x as fast, in a one-process comparison of distances:
// docs/RESULTS.md, issue 14).
inline std::size_t StreamPrefetchBytes(std::int64_t rows, std::size_t row_bytes) {
  return ReadsTwoStreams(rows, row_bytes) ? kTwoStreamPrefetchBytes : kGemvPrefetchBytes;
}

// Calls row(r) once for every r in [r0, r1) (rows of row_bytes bytes), in two-stream order, or
// front to back when ReadsTwoStreams(r1 - r0, row_bytes) is false.
template <typename Row>
inline void ForEachRowTwoStreams(std::int64_t r0, std::int64_t r1, std::size_t row_bytes,
                                 Row&& row) {
  if (!ReadsTwoStreams(r1 - r0, row_bytes)) {
    for (std::int64_t r = r0; r < r1; ++r) row(r);
    return;
  }
  const std::int64_t group = StreamGroupRows(row_bytes);
  const std::int64_t mid = r0 + (r1 - r0) / 2;  // the second stream's first row
  std::int64_t a = r0, b = mid;
  for (; a + group <= mid; a += group, b += group) {
    for (std::int64_t i = 0; i < group; ++i) row(a + i);
    for (std::int64_t i = 0; i < group; ++i) row(b + i);
  }
  for (; a < mid; ++a) row(a);
  for (; b < r1; ++b) row(b);
}

// A single-token GEMV's loop: y[r] = row(w + r * row_bytes, ahead) for every r in [r0, r1), in
// ForEachRowTwoStreams' order, `ahead` the prefetch distance StreamPrefetchBytes gives.
template <typename Row>
inline void GemvRows(const void* w, std::size_t row_bytes, float* y, std::int64_t r0,
                     std::int64_t r1, Row&& row) {
  const auto* base = static_cast<const std::byte*>(w);
  const std::size_t ahead = StreamPrefetchBytes(r1 - r0, row_bytes);
  ForEachRowTwoStreams(r0, r1, row_bytes,
                       [&](std::int64_t r) { y[r] = row(base + r * row_bytes, ahead); });
}

}  // namespace smartgen::kernels::internal
