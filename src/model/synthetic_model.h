// Synthetic models: a preset's architecture and shape with seeded random weights and a
// synthetic byte-level vocabulary, written as GGUF. `smartgen make-model` and the tests use it.
// Weights are drawn in file order from one deterministic stream: matrices N(0, 0.02^2), norm
// weights 1 + N(0, 0.05^2), biases N(0, 0.02^2); the same spec gives the same bytes.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "gguf/ggml_type.h"
#include "model/presets.h"

namespace smartgen::model {

struct SyntheticModelSpec {
  ModelPreset preset;
  gguf::GgmlType type = gguf::GgmlType::kF16;  // matrices; norms and biases stay f32
  std::uint64_t seed = 1;
  std::string out;                             // GGUF path to write
};

Status WriteSyntheticModel(const SyntheticModelSpec& spec);

}  // namespace smartgen::model
