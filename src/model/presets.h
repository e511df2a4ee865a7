// Model presets: real architectures and shapes for `smartgen make-model`, which writes them
// with seeded random weights and a synthetic byte-level vocabulary (the embedded default
// model of the demo and the benchmarks).
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace smartgen::model {

struct ModelPreset {
  std::string_view name;
  std::string_view arch;  // general.architecture
  int n_layers;
  int n_embd;
  int n_heads;
  int n_kv_heads;
  int head_dim;
  int n_ff;
  int n_vocab;
  int n_ctx;
  float rope_base;
  float rms_eps;
  bool tied_output;
  // gemma2 / gemma3: the window of the sliding-window layers (which layers: the arch's default
  // pattern, every other layer for gemma2, 5 of 6 for gemma3); gemma3: their RoPE base.
  int sliding_window = 0;
  float rope_base_swa = 0.0f;
};

// All presets, e.g. "smollm2-135m", "qwen2.5-0.5b", "tiny".
std::span<const ModelPreset> AllPresets();
// The preset called `name`, or nullptr.
const ModelPreset* FindPreset(std::string_view name);

}  // namespace smartgen::model
