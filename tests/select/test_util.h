// Helpers shared by the select tests: sequences filled with chosen keys, synthetic models.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/fp16.h"
#include "kv/block_pool.h"
#include "kv/sequence_kv.h"
#include "model/model.h"
#include "model/synthetic_model.h"

namespace smartgen::select::testing {

// keys / values: [n_layers][n_heads][n_tokens][head_dim] floats, written in the pool's dtype.
inline std::unique_ptr<kv::SequenceKv> FillSequence(kv::BlockPool* pool, std::int64_t n_tokens,
                                                    const std::vector<float>& keys,
                                                    const std::vector<float>& values) {
  const kv::KvGeometry& g = pool->geometry();
  auto seq = std::make_unique<kv::SequenceKv>(pool);
  if (!seq->Reserve(n_tokens).ok()) return nullptr;
  seq->set_n_tokens(n_tokens);
  const std::size_t d = g.head_dim;
  for (int l = 0; l < g.n_layers; ++l) {
    for (int h = 0; h < g.n_kv_heads; ++h) {
      for (std::int64_t t = 0; t < n_tokens; ++t) {
        const std::size_t at = ((std::size_t(l) * g.n_kv_heads + h) * n_tokens + t) * d;
        std::byte* k = seq->KRow(l, h, t);
        std::byte* v = seq->VRow(l, h, t);
        for (std::size_t i = 0; i < d; ++i) {
          if (g.dtype == kv::KvDType::kF32) {
            reinterpret_cast<float*>(k)[i] = keys[at + i];
            reinterpret_cast<float*>(v)[i] = values[at + i];
          } else {
            reinterpret_cast<kernels::f16_t*>(k)[i] = kernels::F32ToF16(keys[at + i]);
            reinterpret_cast<kernels::f16_t*>(v)[i] = kernels::F32ToF16(values[at + i]);
          }
        }
      }
    }
  }
  return seq;
}

inline std::vector<float> RandomVector(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// A synthetic model of `preset`, written once per test binary under the test temp dir.
inline std::unique_ptr<model::Model> SyntheticModel(const char* preset, std::uint64_t seed = 7) {
  model::SyntheticModelSpec spec;
  spec.preset = *model::FindPreset(preset);
  spec.type = gguf::GgmlType::kF32;
  spec.seed = seed;
  spec.out = ::testing::TempDir() + "/select_test_" + preset + ".gguf";
  if (!model::WriteSyntheticModel(spec).ok()) return nullptr;
  auto m = model::Model::Load(spec.out);
  return m.ok() ? std::move(*m) : nullptr;
}

inline std::string SharedModel(const char* name) {
  return std::string(SMARTGEN_SHARED_DIR) + "/models/" + name;
}

}  // namespace smartgen::select::testing
