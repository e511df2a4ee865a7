// Rotary position embedding, as ggml_rope_ext computes it without YaRN extrapolation:
//   theta_i = freq_scale * (pos * base^(-2i / n_rot) / freq_factors[i]), i < n_rot / 2
// (freq_scale = 1 / factor of linear rope scaling; freq_factors: Llama 3.1's rope_freqs
// tensor, or none);
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
  float freq_scale = 1.0f;
  // [n_rot / 2] divisors of each pair's angle, or nullptr. Borrowed: it must outlive every
  // use of the config (the model's config owns it, see model::ModelConfig).
  const float* freq_factors = nullptr;
};

// Rotates x[n_heads][head_dim] in place for position `pos`.
void Rope(const RopeConfig& config, float* x, int n_heads, std::int64_t pos);
void RopeReference(const RopeConfig& config, float* x, int n_heads, std::int64_t pos);

}  // namespace smartgen::kernels
