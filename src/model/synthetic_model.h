// Synthetic models: a preset's architecture and shape with seeded random weights and a
// synthetic byte-level vocabulary, written as GGUF. `smartgen make-model` and the tests use it.
// Weights are drawn in file order from one deterministic stream: matrices N(0, 0.02^2), norm
// weights 1 + N(0, 0.05^2), biases N(0, 0.02^2); the same spec gives the same bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "gguf/ggml_type.h"
#include "model/presets.h"
#include "model/quant_recipe.h"

namespace smartgen::model {

struct SyntheticModelSpec {
  ModelPreset preset;
  gguf::GgmlType type = gguf::GgmlType::kF16;  // matrices; norms and biases stay f32
  // A llama-quantize recipe instead of one type (quant_recipe.h): Q3_K_M, Q4_K_M or Q5_K_M,
  // with llama.cpp's per-tensor choices and its fallbacks for rows not 256 wide.
  QuantRecipe recipe = QuantRecipe::kNone;
  bool q4_k_m = false;  // the same as recipe = kQ4_K_M (kept for existing callers)
  std::uint64_t seed = 1;
  std::string out;                             // GGUF path to write
};

Status WriteSyntheticModel(const SyntheticModelSpec& spec);

// Parses a --type name: a GGUF weight type smartgen computes with (f32, f16, bf16, q8_0,
// q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs) or a recipe (q3_k_m,
// q4_k_m, q5_k_m), into `spec`. False when the name is neither.
bool ParseSyntheticType(std::string_view name, SyntheticModelSpec* spec);

}  // namespace smartgen::model
