#include "select/block_summary.h"

#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/fp16.h"

namespace smartgen::select {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the summary wire format is little-endian");

constexpr char kMagic[4] = {'S', 'G', 'B', 'S'};

// Outward int8 quantization of one bound: the dequantized value (q * scale, as float) is
// <= x for a min and >= x for a max. scale is max|x| / 127 nudged up two ulps, so |x / scale|
// stays below 127 and the nudging loops below run at most a step.
std::int8_t QuantizeDown(float x, float scale) {
  if (scale == 0.0f) return 0;
  int q = static_cast<int>(std::floor(x / scale));
  q = std::clamp(q, -127, 127);
  while (q > -127 && static_cast<float>(q) * scale > x) --q;
  return static_cast<std::int8_t>(q);
}
std::int8_t QuantizeUp(float x, float scale) {
  if (scale == 0.0f) return 0;
  int q = static_cast<int>(std::ceil(x / scale));
  q = std::clamp(q, -127, 127);
  while (q < 127 && static_cast<float>(q) * scale < x) ++q;
  return static_cast<std::int8_t>(q);
}

template <typename T>
void Put(std::byte*& p, T v) {
  std::memcpy(p, &v, sizeof(T));
  p += sizeof(T);
}
template <typename T>
T Get(const std::byte*& p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  p += sizeof(T);
  return v;
}

}  // namespace

LayerSummaries LayerSummaries::BuildFromKeys(int layer, int n_heads, int head_dim, int block_tokens,
                                             std::int64_t n_tokens, std::span<const float> keys) {
  LayerSummaries s;
  s.layer_ = layer;
  s.n_heads_ = n_heads;
  s.head_dim_ = head_dim;
  s.block_tokens_ = block_tokens;
  s.n_tokens_ = n_tokens;
  s.n_blocks_ = static_cast<std::int32_t>((n_tokens + block_tokens - 1) / block_tokens);
  const std::size_t nb = static_cast<std::size_t>(s.n_blocks_);
  const std::size_t d = static_cast<std::size_t>(head_dim);
  std::vector<float> mins(n_heads * nb * d, std::numeric_limits<float>::infinity());
  std::vector<float> maxs(n_heads * nb * d, -std::numeric_limits<float>::infinity());
  for (int h = 0; h < n_heads; ++h) {
    for (std::int64_t t = 0; t < n_tokens; ++t) {
      const float* k = keys.data() + (std::size_t(h) * n_tokens + t) * d;
      float* mn = mins.data() + (h * nb + t / block_tokens) * d;
      float* mx = maxs.data() + (h * nb + t / block_tokens) * d;
      for (std::size_t i = 0; i < d; ++i) {
        mn[i] = std::min(mn[i], k[i]);
        mx[i] = std::max(mx[i], k[i]);
      }
    }
  }
  s.Finish(mins, maxs);
  return s;
}

LayerSummaries LayerSummaries::Build(const kv::SequenceKv& kv, int layer, std::int64_t n_tokens) {
  const kv::KvGeometry& g = kv.geometry();
  LayerSummaries s;
  s.layer_ = layer;
  s.n_heads_ = g.n_kv_heads;
  s.head_dim_ = g.head_dim;
  s.block_tokens_ = g.block_tokens;
  s.n_tokens_ = n_tokens;
  s.n_blocks_ = static_cast<std::int32_t>(g.BlocksFor(n_tokens));
  const std::size_t nb = static_cast<std::size_t>(s.n_blocks_);
  const std::size_t d = static_cast<std::size_t>(g.head_dim);
  std::vector<float> mins(g.n_kv_heads * nb * d), maxs(g.n_kv_heads * nb * d);
  std::vector<float> row(d);
  for (int h = 0; h < g.n_kv_heads; ++h) {
    for (std::size_t b = 0; b < nb; ++b) {
      const kernels::KvBlockRef ref = kv.Ref(layer, h, static_cast<std::int64_t>(b));
      const std::int64_t rows = std::min<std::int64_t>(
          g.block_tokens, n_tokens - static_cast<std::int64_t>(b) * g.block_tokens);
      float* mn = mins.data() + (h * nb + b) * d;
      float* mx = maxs.data() + (h * nb + b) * d;
      std::fill(mn, mn + d, std::numeric_limits<float>::infinity());
      std::fill(mx, mx + d, -std::numeric_limits<float>::infinity());
      for (std::int64_t t = 0; t < rows; ++t) {
        const float* k;
        if (g.dtype == kv::KvDType::kF32) {
          k = static_cast<const float*>(ref.k) + t * d;
        } else {
          const auto* k16 = static_cast<const kernels::f16_t*>(ref.k) + t * d;
          for (std::size_t i = 0; i < d; ++i) row[i] = kernels::F16ToF32(k16[i]);
          k = row.data();
        }
        for (std::size_t i = 0; i < d; ++i) {
          mn[i] = std::min(mn[i], k[i]);
          mx[i] = std::max(mx[i], k[i]);
        }
      }
    }
  }
  s.Finish(mins, maxs);
  return s;
}

void LayerSummaries::Finish(const std::vector<float>& mins, const std::vector<float>& maxs) {
  const std::size_t nb = static_cast<std::size_t>(n_blocks_);
  const std::size_t d = static_cast<std::size_t>(head_dim_);
  scales_.assign(n_heads_ * d, 0.0f);
  bounds_.assign(n_heads_ * 2 * d * nb, 0);
  for (int h = 0; h < n_heads_; ++h) {
    float* scale = scales_.data() + h * d;
    for (std::size_t b = 0; b < nb; ++b) {
      for (std::size_t i = 0; i < d; ++i) {
        scale[i] = std::max(
            {scale[i], std::abs(mins[(h * nb + b) * d + i]), std::abs(maxs[(h * nb + b) * d + i])});
      }
    }
    for (std::size_t i = 0; i < d; ++i) {
      if (scale[i] == 0.0f) continue;
      const float inf = std::numeric_limits<float>::infinity();
      scale[i] = std::nextafter(std::nextafter(scale[i] / 127.0f, inf), inf);
    }
    std::int8_t* mn_plane = bounds_.data() + h * 2 * d * nb;
    std::int8_t* mx_plane = mn_plane + d * nb;
    for (std::size_t b = 0; b < nb; ++b) {
      for (std::size_t i = 0; i < d; ++i) {
        mn_plane[i * nb + b] = QuantizeDown(mins[(h * nb + b) * d + i], scale[i]);
        mx_plane[i * nb + b] = QuantizeUp(maxs[(h * nb + b) * d + i], scale[i]);
      }
    }
  }
}

// The hot loop. Cloned for x86-64-v3 (AVX2 + FMA) with a baseline fallback, picked by the
// loader; the inner loop over blocks vectorises in both. Not under ThreadSanitizer: the loader
// runs the clone's resolver before the sanitizer's runtime is up, and it crashes.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
static void
ScoreChannels(const std::int8_t* mn_plane, const std::int8_t* mx_plane, std::size_t n_blocks,
              std::size_t head_dim, const float* pos, const float* neg, float* __restrict acc) {
  for (std::size_t b = 0; b < n_blocks; ++b) acc[b] = 0.0f;
  for (std::size_t i = 0; i < head_dim; ++i) {
    const float p = pos[i], n = neg[i];
    if (p == 0.0f && n == 0.0f) continue;
    const std::int8_t* __restrict mx = mx_plane + i * n_blocks;
    const std::int8_t* __restrict mn = mn_plane + i * n_blocks;
    for (std::size_t b = 0; b < n_blocks; ++b) {
      acc[b] += p * static_cast<float>(mx[b]) + n * static_cast<float>(mn[b]);
    }
  }
}

void LayerSummaries::UpperBounds(int head, const float* q, int n_q, float* scores) const {
  const std::size_t nb = static_cast<std::size_t>(n_blocks_);
  const std::size_t d = static_cast<std::size_t>(head_dim_);
  thread_local std::vector<float> pos, neg, acc;
  pos.resize(d);
  neg.resize(d);
  acc.resize(nb);
  const float* scale = scales(head);
  for (int j = 0; j < n_q; ++j) {
    const float* qj = q + std::size_t(j) * d;
    for (std::size_t i = 0; i < d; ++i) {
      pos[i] = std::max(qj[i], 0.0f) * scale[i];
      neg[i] = std::min(qj[i], 0.0f) * scale[i];
    }
    float* out = j == 0 ? scores : acc.data();
    ScoreChannels(min_plane(head), max_plane(head), nb, d, pos.data(), neg.data(), out);
    if (j > 0) {
      for (std::size_t b = 0; b < nb; ++b) scores[b] = std::max(scores[b], acc[b]);
    }
  }
}

std::size_t LayerSummaries::serialized_bytes() const {
  return kSummaryHeaderBytes + scales_.size() * sizeof(float) + bounds_.size() +
         sizeof(std::uint64_t);
}

std::vector<std::byte> LayerSummaries::Serialize() const {
  std::vector<std::byte> out(serialized_bytes());
  std::byte* p = out.data();
  std::memcpy(p, kMagic, 4);
  p += 4;
  Put<std::uint16_t>(p, kSummaryVersion);
  Put<std::uint16_t>(p, 0);
  Put<std::uint32_t>(p, static_cast<std::uint32_t>(layer_));
  Put<std::uint32_t>(p, static_cast<std::uint32_t>(n_heads_));
  Put<std::uint32_t>(p, static_cast<std::uint32_t>(n_blocks_));
  Put<std::uint32_t>(p, static_cast<std::uint32_t>(head_dim_));
  Put<std::uint32_t>(p, static_cast<std::uint32_t>(block_tokens_));
  Put<std::uint32_t>(p, 0);
  Put<std::uint64_t>(p, static_cast<std::uint64_t>(n_tokens_));
  std::memcpy(p, scales_.data(), scales_.size() * sizeof(float));
  p += scales_.size() * sizeof(float);
  std::memcpy(p, bounds_.data(), bounds_.size());
  p += bounds_.size();
  Put<std::uint64_t>(p, XXH3_64bits(out.data(), static_cast<std::size_t>(p - out.data())));
  return out;
}

Result<LayerSummaries> LayerSummaries::Parse(std::span<const std::byte> bytes) {
  if (bytes.size() < kSummaryHeaderBytes + sizeof(std::uint64_t)) {
    return DataLoss("block summaries: message of {} bytes is shorter than the {}-byte header",
                    bytes.size(), kSummaryHeaderBytes + sizeof(std::uint64_t));
  }
  if (std::memcmp(bytes.data(), kMagic, 4) != 0) {
    return DataLoss("block summaries: bad magic (not a summary message)");
  }
  const std::byte* p = bytes.data() + 4;
  const auto version = Get<std::uint16_t>(p);
  if (version != kSummaryVersion) {
    return Unimplemented("block summaries: version {} (this build reads version {})", version,
                         kSummaryVersion);
  }
  Get<std::uint16_t>(p);
  LayerSummaries s;
  const auto layer = Get<std::uint32_t>(p);
  const auto n_heads = Get<std::uint32_t>(p);
  const auto n_blocks = Get<std::uint32_t>(p);
  const auto head_dim = Get<std::uint32_t>(p);
  const auto block_tokens = Get<std::uint32_t>(p);
  Get<std::uint32_t>(p);
  const auto n_tokens = Get<std::uint64_t>(p);
  // Bounds keep the size arithmetic below far from overflow; real models are much smaller.
  if (layer > 4096 || n_heads == 0 || n_heads > 4096 || head_dim == 0 || head_dim > 4096 ||
      block_tokens == 0 || block_tokens > 65536 || n_blocks > (1u << 26)) {
    return DataLoss(
        "block summaries: implausible header (layer {}, {} heads, head_dim {}, block "
        "{} tokens, {} blocks)",
        layer, n_heads, head_dim, block_tokens, n_blocks);
  }
  if (n_tokens > std::uint64_t{n_blocks} * block_tokens ||
      (n_blocks > 0 && n_tokens <= std::uint64_t{n_blocks - 1} * block_tokens)) {
    return DataLoss("block summaries: {} tokens do not fill {} blocks of {}", n_tokens, n_blocks,
                    block_tokens);
  }
  const std::uint64_t n_scales = std::uint64_t{n_heads} * head_dim;
  const std::uint64_t n_bounds = n_scales * 2 * n_blocks;
  const std::uint64_t want = kSummaryHeaderBytes + n_scales * 4 + n_bounds + 8;
  if (bytes.size() != want) {
    return DataLoss(
        "block summaries: message of {} bytes, header says {} (layer {}, {} heads, "
        "{} blocks, head_dim {})",
        bytes.size(), want, layer, n_heads, n_blocks, head_dim);
  }
  std::uint64_t checksum;
  std::memcpy(&checksum, bytes.data() + want - 8, 8);
  if (checksum != XXH3_64bits(bytes.data(), want - 8)) {
    return DataLoss("block summaries: checksum mismatch (layer {}): corrupt message", layer);
  }
  s.layer_ = static_cast<int>(layer);
  s.n_heads_ = static_cast<int>(n_heads);
  s.n_blocks_ = static_cast<std::int32_t>(n_blocks);
  s.head_dim_ = static_cast<int>(head_dim);
  s.block_tokens_ = static_cast<int>(block_tokens);
  s.n_tokens_ = static_cast<std::int64_t>(n_tokens);
  s.scales_.resize(n_scales);
  std::memcpy(s.scales_.data(), p, n_scales * 4);
  p += n_scales * 4;
  for (float f : s.scales_) {
    if (!std::isfinite(f) || f < 0) return DataLoss("block summaries: invalid scale {}", f);
  }
  s.bounds_.resize(n_bounds);
  std::memcpy(s.bounds_.data(), p, n_bounds);
  return s;
}

}  // namespace smartgen::select
