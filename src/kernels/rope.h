// Rotary position embedding, as ggml_rope_ext computes it (no scaling):
//   theta_i = pos * base^(-2i / n_rot), i < n_rot / 2;
//   kNorm (llama):  rotates adjacent pairs (x[2i], x[2i+1]);
//   kNeox (qwen2/3): rotates pairs (x[i], x[i + n_rot/2]).
// Dimensions at or past n_rot are left unchanged.
#pragma once

#include <cstdint>

namespace smartgen::kernels {

enum class RopeStyle { kNorm, kNeox };

struct RopeConfig {
  int head_dim = 0;
  int n_rot = 0;  // rotated dims per head (<= head_dim, even)
  float freq_base = 10000.0f;
  RopeStyle style = RopeStyle::kNorm;
};

// Rotates x[n_heads][head_dim] in place for position `pos`.
void Rope(const RopeConfig& config, float* x, int n_heads, std::int64_t pos);
void RopeReference(const RopeConfig& config, float* x, int n_heads, std::int64_t pos);

}  // namespace smartgen::kernels
