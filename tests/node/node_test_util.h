// Shared set-up of the node tests: a small synthetic model (written once per test binary and
// seed) and the configuration every test node starts from.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "core/result.h"
#include "core/thread_pool.h"
#include "kv/block_pool.h"
#include "kv/sequence_kv.h"
#include "model/forward.h"
#include "model/generate.h"
#include "model/model.h"
#include "model/presets.h"
#include "model/synthetic_model.h"
#include "node/common/node_config.h"
#include "node/router/router.h"

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

// A request through the router with EOG ignored and a 60 s deadline; the tokens as streamed.
inline RouteRequest TestRequest(const std::string& mode, const std::vector<std::int32_t>& prompt,
                                int max_tokens) {
  RouteRequest rq;
  rq.spec.prompt = prompt;
  rq.spec.max_tokens = max_tokens;
  rq.mode = mode;
  rq.spec.stop_at_eog = false;
  rq.deadline = core::Deadline::After(core::Seconds(60));
  return rq;
}
inline Result<RouteResult> GenerateTokens(Router& router, const RouteRequest& rq,
                                          std::vector<std::int32_t>* out) {
  return router.Generate(rq, [out](std::int32_t t) {
    out->push_back(t);
    return true;
  });
}

// The same request in one process, without any node: the tokens every mode must reproduce.
inline std::vector<std::int32_t> ReferenceTokens(const std::string& model_path,
                                                 const std::vector<std::int32_t>& prompt,
                                                 int max_tokens, model::SamplingParams sampling = {}) {
  auto m = model::Model::Load(model_path);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return {};
  core::ThreadPool pool(1);
  model::Forward forward(**m, &pool);
  kv::BlockPool blocks(forward.KvGeometryFor(kv::KvDType::kF32), 1 << 14);
  kv::SequenceKv seq(&blocks);
  model::GenerateOptions g;
  g.max_tokens = max_tokens;
  g.sampling = sampling;
  g.stop_at_eog = false;
  auto out = model::Generate(forward, seq, prompt, g);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? *out : std::vector<std::int32_t>{};
}

}  // namespace smartgen::node::testing
