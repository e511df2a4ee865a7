#include "kernels/rope.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/kernel_table.h"

namespace smartgen::kernels {
namespace {

constexpr int kMaxRotPairs = 512;

// cos/sin of theta_i, computed like ggml_rope_cache_init: theta starts at pos and is
// multiplied by theta_scale = base^(-2/n_rot) (f32) once per pair; each pair's angle is
// freq_scale * (theta / factor), in that order (rope_yarn without extrapolation).
void RopeTables(const RopeConfig& c, std::int64_t pos, float* cos_t, float* sin_t) {
  const float theta_scale = std::pow(c.freq_base, -2.0f / static_cast<float>(c.n_rot));
  float theta = static_cast<float>(pos);
  for (int i = 0; i < c.n_rot / 2; ++i) {
    const float extrap = c.freq_factors != nullptr ? theta / c.freq_factors[i] : theta;
    const float angle = c.freq_scale * extrap;
    cos_t[i] = std::cos(angle);
    sin_t[i] = std::sin(angle);
    theta *= theta_scale;
  }
}

// Per-thread cache of those tables by position. A forward pass rotates q and k of every layer
// at the same positions, so each position's cos/sin (n_rot libm calls, more than the rotation
// itself) is computed once instead of 2 x n_layers times. At most kCacheFloats floats (4 MiB)
// per thread; positions past that are computed per call. Values are identical either way.
// The table is reserved whole and never moves or grows: its pages are touched as positions
// are first used (one page per 16 positions of a 64-wide rotation), so a decode step that
// reaches a new position pays one page, not a copy of the table into a doubled one (1-2 MiB of
// fresh pages on a step at position 2048 or 4096: 5-10 ms on the paravirtualised VM).
class RopeTableCache {
 public:
  bool Matches(const RopeConfig& c) const {
    return c.n_rot == n_rot_ && c.freq_base == freq_base_ && c.freq_scale == freq_scale_ &&
           c.freq_factors == freq_factors_;
  }
  // [cos | sin] (n_rot / 2 each) for pos, or nullptr when pos is outside the cached range.
  const float* Get(const RopeConfig& c, std::int64_t pos) {
    if (!Matches(c)) {
      n_rot_ = c.n_rot;
      freq_base_ = c.freq_base;
      freq_scale_ = c.freq_scale;
      freq_factors_ = c.freq_factors;
      valid_.assign(c.n_rot > 0 ? static_cast<std::size_t>(kCacheFloats / c.n_rot) : 0, 0);
      if (!table_) table_ = std::make_unique_for_overwrite<float[]>(kCacheFloats);
    }
    const std::int64_t stride = c.n_rot;
    if (pos < 0 || pos >= static_cast<std::int64_t>(valid_.size())) return nullptr;
    float* entry = table_.get() + pos * stride;
    if (!valid_[pos]) {
      RopeTables(c, pos, entry, entry + stride / 2);
      valid_[pos] = 1;
    }
    return entry;
  }

 private:
  static constexpr std::int64_t kCacheFloats = std::int64_t{1} << 20;
  int n_rot_ = -1;
  float freq_base_ = 0.0f;
  float freq_scale_ = 0.0f;
  const float* freq_factors_ = nullptr;
  std::unique_ptr<float[]> table_;      // kCacheFloats, pages touched as positions are used
  std::vector<std::uint8_t> valid_;     // per position (kCacheFloats / n_rot)
};

}  // namespace

namespace internal::scalar {

void RopeApply(const RopeConfig& c, const float* cos_t, const float* sin_t, float* x, int n_heads) {
  const int half = c.n_rot / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* xh = x + static_cast<std::int64_t>(h) * c.head_dim;
    for (int i = 0; i < half; ++i) {
      // kNorm rotates (x[2i], x[2i+1]); kNeox rotates (x[i], x[i + n_rot/2]).
      const int i0 = c.style == RopeStyle::kNorm ? 2 * i : i;
      const int i1 = c.style == RopeStyle::kNorm ? 2 * i + 1 : i + half;
      const float x0 = xh[i0], x1 = xh[i1];
      xh[i0] = x0 * cos_t[i] - x1 * sin_t[i];
      xh[i1] = x0 * sin_t[i] + x1 * cos_t[i];
    }
  }
}

}  // namespace internal::scalar

void Rope(const RopeConfig& config, float* x, int n_heads, std::int64_t pos) {
  assert(config.n_rot % 2 == 0 && config.n_rot <= config.head_dim &&
         config.n_rot / 2 <= kMaxRotPairs);
  // One cache per RoPE configuration in use (models with local and global layers have two),
  // replaced round-robin beyond kCaches.
  constexpr int kCaches = 4;
  thread_local RopeTableCache caches[kCaches];
  thread_local int next_victim = 0;
  RopeTableCache* cache = nullptr;
  for (RopeTableCache& c : caches) {
    if (c.Matches(config)) cache = &c;
  }
  if (cache == nullptr) {
    cache = &caches[next_victim];
    next_victim = (next_victim + 1) % kCaches;
  }
  if (const float* t = cache->Get(config, pos)) {
    internal::ActiveKernels().rope_apply(config, t, t + config.n_rot / 2, x, n_heads);
    return;
  }
  float cos_t[kMaxRotPairs], sin_t[kMaxRotPairs];
  RopeTables(config, pos, cos_t, sin_t);
  internal::ActiveKernels().rope_apply(config, cos_t, sin_t, x, n_heads);
}

void RopeReference(const RopeConfig& config, float* x, int n_heads, std::int64_t pos) {
  assert(config.n_rot % 2 == 0 && config.n_rot <= config.head_dim &&
         config.n_rot / 2 <= kMaxRotPairs);
  float cos_t[kMaxRotPairs], sin_t[kMaxRotPairs];
  RopeTables(config, pos, cos_t, sin_t);
  internal::scalar::RopeApply(config, cos_t, sin_t, x, n_heads);
}

}  // namespace smartgen::kernels
