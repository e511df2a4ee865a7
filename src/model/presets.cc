#include "model/presets.h"

namespace smartgen::model {
namespace {

// Shapes from the models' published configs (HF config.json).
constexpr ModelPreset kPresets[] = {
    // name            arch     L   embd heads kv hd   ffn   vocab   ctx    rope     eps   tied
    {"smollm2-135m", "llama", 30, 576, 9, 3, 64, 1536, 49152, 8192, 100000.0f, 1e-5f, true},
    {"smollm2-360m", "llama", 32, 960, 15, 5, 64, 2560, 49152, 8192, 100000.0f, 1e-5f, true},
    {"qwen2.5-0.5b", "qwen2", 24, 896, 14, 2, 64, 4864, 151936, 32768, 1000000.0f, 1e-6f, true},
    {"qwen3-0.6b", "qwen3", 28, 1024, 16, 8, 128, 3072, 151936, 40960, 1000000.0f, 1e-6f, true},
    {"llama3.2-1b", "llama", 16, 2048, 32, 8, 64, 8192, 128256, 131072, 500000.0f, 1e-5f, true},
    // Small shapes for tests: fast to make and to run.
    {"tiny", "llama", 2, 64, 4, 2, 16, 128, 384, 4096, 10000.0f, 1e-5f, false},
    {"tiny-qwen2", "qwen2", 2, 64, 4, 2, 16, 128, 384, 4096, 1000000.0f, 1e-6f, true},
    {"tiny-qwen3", "qwen3", 2, 64, 4, 2, 32, 128, 384, 4096, 1000000.0f, 1e-6f, true},
    {"small", "llama", 4, 256, 4, 2, 64, 512, 512, 8192, 10000.0f, 1e-5f, true},
    // Gemma 3 1B (local window 512, 5 local layers per global one) and small shapes of the
    // other architectures for tests.
    {"gemma3-1b", "gemma3", 26, 1152, 4, 1, 256, 6912, 262144, 32768, 1000000.0f, 1e-6f, true,
     512, 10000.0f},
    // Gemma 3's layer pattern (5 sliding-window layers per global one) and window (1024, as
    // Gemma 3 4B-27B use; rope 10000 local, 1e6 global) at SmolLM2-135M's shape: the
    // sliding-window transfer's benchmark model on 2 cores (docs/RESULTS.md, issue 12).
    {"gemma3-smol", "gemma3", 30, 576, 9, 3, 64, 1536, 49152, 8192, 1000000.0f, 1e-6f, true,
     1024, 10000.0f},
    {"tiny-gemma3", "gemma3", 6, 64, 4, 2, 32, 192, 384, 4096, 1000000.0f, 1e-6f, true, 32,
     10000.0f},
    {"tiny-gemma2", "gemma2", 4, 64, 4, 2, 32, 128, 384, 4096, 10000.0f, 1e-6f, true, 32},
    {"tiny-phi3", "phi3", 2, 64, 4, 2, 16, 128, 384, 4096, 10000.0f, 1e-5f, false},
};

}  // namespace

std::span<const ModelPreset> AllPresets() { return kPresets; }

const ModelPreset* FindPreset(std::string_view name) {
  for (const ModelPreset& p : kPresets) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace smartgen::model
