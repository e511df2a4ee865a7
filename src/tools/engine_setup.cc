#include "tools/engine_setup.h"

#include "kernels/matmul.h"

namespace smartgen::tools {

void EngineOptions::AddFlags(CLI::App& cmd) {
  cmd.add_option("--model,-m", model_path, "GGUF model file")->required();
  cmd.add_option("--threads,-t", threads, "compute threads")->capture_default_str();
  cmd.add_option("--cpus", cpus, kCpusHelp);
  cmd.add_option("--kv-dtype", kv_dtype, "KV cache type: f16 or f32")
      ->check(CLI::IsMember({"f16", "f32"}))
      ->capture_default_str();
  cmd.add_option("--block-tokens", block_tokens, "tokens per KV block")->capture_default_str();
  cmd.add_option("--ctx", ctx, "context length (0 = the model's)")->capture_default_str();
  cmd.add_flag("--fast-dot,!--exact-dot", fast_dot,
               "decode with int8 dot products (Q8_0, Q4_0, Q5_0, Q4_K, Q6_K; AVX-512 VNNI, else AVX2) "
               "and AVX512-BF16 (BF16) where present (the default; --exact-dot: f32 dots of the "
               "exact weights)")
      ->capture_default_str();
  cmd.add_flag("--weights-huge-pages,!--weights-mmap", weights_huge_pages,
               "read the weights into transparent huge pages, as serving nodes do (default; --weights-mmap: map the file)")
      ->capture_default_str();
}

std::string EngineOptions::ToString() const {
  return fmt::format("model={} threads={} cpus={} kv_dtype={} block_tokens={} ctx={} fast_dot={} weights_huge_pages={}",
                     model_path, threads, cpus.empty() ? "any" : cpus, kv_dtype, block_tokens, ctx, fast_dot, weights_huge_pages);
}

Result<kv::KvDType> ParseKvDType(const std::string& name) {
  if (name == "f16") return kv::KvDType::kF16;
  if (name == "f32") return kv::KvDType::kF32;
  return InvalidArgument("KV dtype '{}' is not f16 or f32", name);
}

Result<Engine> LoadEngine(const EngineOptions& options, std::int64_t max_tokens, int n_seqs) {
  if (options.threads < 1 || options.threads > 256) {
    return InvalidArgument("--threads {} is out of range", options.threads);
  }
  if (options.block_tokens < 1 || options.block_tokens > 1024) {
    return InvalidArgument("--block-tokens {} is out of range", options.block_tokens);
  }
  Engine e;
  kernels::SetFastDot(options.fast_dot);
  // Placed first: the weights' pages are then first touched on the engine's own CPUs.
  SG_ASSIGN_OR_RETURN(e.pool, core::ThreadPool::CreateOn(options.threads, options.cpus));
  SG_ASSIGN_OR_RETURN(e.model, model::Model::Load(options.model_path,
                                                  options.weights_huge_pages ? core::FilePlacement::kHugePages
                                                                             : core::FilePlacement::kMapped));
  SG_ASSIGN_OR_RETURN(const kv::KvDType dtype, ParseKvDType(options.kv_dtype));
  model::ForwardOptions fo;
  fo.max_context = options.ctx;
  e.forward = std::make_unique<model::Forward>(*e.model, e.pool.get(), fo);
  const kv::KvGeometry geometry = e.forward->KvGeometryFor(dtype, options.block_tokens);
  const std::int64_t tokens = std::min<std::int64_t>(max_tokens, e.forward->max_context());
  const std::int64_t blocks = geometry.BlocksFor(tokens) * geometry.n_layers *
                              geometry.n_kv_heads * n_seqs;
  e.blocks = std::make_unique<kv::BlockPool>(geometry, blocks);
  return e;
}

}  // namespace smartgen::tools
