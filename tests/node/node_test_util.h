// Shared set-up of the node tests: a small synthetic model (written once per test binary and
// seed) and the configuration every test node starts from.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "model/presets.h"
#include "model/synthetic_model.h"
#include "node/node_config.h"

namespace smartgen::node::testing {

// The "small" preset (4 layers, 256 wide) with f32 weights drawn from `seed`.
inline std::string SmallModelPath(std::uint64_t seed) {
  static std::map<std::uint64_t, std::string> written;
  auto [it, fresh] = written.emplace(seed, "");
  if (fresh) {
    model::SyntheticModelSpec spec;
    spec.preset = *model::FindPreset("small");
    spec.type = gguf::GgmlType::kF32;
    spec.seed = seed;
    spec.out = ::testing::TempDir() + "/node_test_small_" + std::to_string(seed) + ".gguf";
    EXPECT_TRUE(model::WriteSyntheticModel(spec).ok());
    it->second = spec.out;
  }
  return it->second;
}

// One thread, an 8192-token f32 KV pool, the small model of `model_seed`.
inline NodeConfig SmallNodeConfig(const std::string& name, std::uint64_t model_seed) {
  NodeConfig c;
  c.name = name;
  c.model_path = SmallModelPath(model_seed);
  c.threads = 1;
  c.kv_capacity_tokens = 8192;
  c.kv_dtype = "f32";
  return c;
}

}  // namespace smartgen::node::testing
