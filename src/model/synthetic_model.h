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

namespace smartgen::model {

struct SyntheticModelSpec {
  ModelPreset preset;
  gguf::GgmlType type = gguf::GgmlType::kF16;  // matrices; norms and biases stay f32
  // llama.cpp's Q4_K_M recipe instead of one type: Q4_K, with Q6_K for the output (or tied
  // embedding) and for attn_v/ffn_down in the layers llama.cpp gives more bits. Rows that do
  // not split into 256-wide super-blocks fall back (llama.cpp: Q5_0 and Q8_0; here Q4_0 and
  // Q8_0, as Q5_0 is not a type we read).
  bool q4_k_m = false;
  std::uint64_t seed = 1;
  std::string out;                             // GGUF path to write
};

Status WriteSyntheticModel(const SyntheticModelSpec& spec);

// Parses a --type name: a GGUF weight type (f32, f16, bf16, q8_0, q4_0, q4_k, q6_k) or the
// q4_k_m recipe, into `spec`. False when the name is neither.
bool ParseSyntheticType(std::string_view name, SyntheticModelSpec* spec);

}  // namespace smartgen::model
