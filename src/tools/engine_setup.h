// Shared setup for the commands that run the engine in-process (run, bench engine): loading a
// model, the thread pool, and the KV options, configured from one set of flags.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "core/result.h"
#include "core/thread_pool.h"
#include "kv/block_pool.h"
#include "model/forward.h"
#include "model/model.h"

namespace smartgen::tools {

// The help of every command's --cpus (run, bench engine, serve prefill / decode / local).
inline constexpr const char* kCpusHelp =
    "CPUs to run on, as taskset lists them (0-3,8): the process is confined to them and compute "
    "thread i pinned to the i-th, so engines sharing a machine keep their own cores (default: "
    "any CPU, unpinned)";

struct EngineOptions {
  std::string model_path;
  int threads = 2;
  std::string cpus;  // --cpus: the CPUs this process and its compute lanes run on ("" = any)
  std::string kv_dtype = "f16";
  int block_tokens = 16;
  std::int64_t ctx = 0;  // 0 = model's context length
  // Decode with VNNI / BF16 dot products where the CPU has them (kernels::SetFastDot), as
  // llama.cpp computes them; --exact-dot for the exact f32 path.
  bool fast_dot = true;
  // Weights read into transparent huge pages (core::FilePlacement::kHugePages) instead of mapped
  // from the file, as serving nodes hold them: SmolLM2-135M Q8_0 decoded 1.15-1.19x faster so on
  // a paravirtualised Zen 5 VM (docs/RESULTS.md, "First touch").
  bool weights_huge_pages = true;

  void AddFlags(CLI::App& cmd);
  std::string ToString() const;
};

// A loaded model with a pool, a Forward and a KV block pool sized for `max_tokens` tokens of
// `n_seqs` sequences.
struct Engine {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<core::ThreadPool> pool;
  std::unique_ptr<model::Forward> forward;
  std::unique_ptr<kv::BlockPool> blocks;
};

Result<Engine> LoadEngine(const EngineOptions& options, std::int64_t max_tokens, int n_seqs = 1);

Result<kv::KvDType> ParseKvDType(const std::string& name);

}  // namespace smartgen::tools
