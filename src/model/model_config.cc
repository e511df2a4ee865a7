#include "model/model_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace smartgen::model {

std::string ModelConfig::ToString() const {
  return fmt::format(
      "arch {} ({}), {} layers, n_embd {}, {} heads / {} kv heads, head_dim {}, ffn {}, vocab {}, "
      "ctx {}, rope {} base {} n_rot {}, rms_eps {}{}{}{}",
      arch_name, name, n_layers, n_embd, n_heads, n_kv_heads, head_dim, n_ff, n_vocab,
      n_ctx_train, rope.style == kernels::RopeStyle::kNeox ? "neox" : "norm", rope.freq_base,
      rope.n_rot, rms_eps, tied_output ? ", tied output" : "", has_qkv_bias ? ", qkv bias" : "",
      has_qk_norm ? ", qk norm" : "");
}

Result<ModelConfig> ReadModelConfig(const gguf::GgufFile& file) {
  ModelConfig c;
  SG_ASSIGN_OR_RETURN(std::string_view arch, file.GetString("general.architecture"));
  c.arch_name = std::string(arch);
  if (arch == "llama") {
    c.arch = Arch::kLlama;
  } else if (arch == "qwen2") {
    c.arch = Arch::kQwen2;
    c.has_qkv_bias = true;
  } else if (arch == "qwen3") {
    c.arch = Arch::kQwen3;
    c.has_qk_norm = true;
  } else {
    return Unimplemented("architecture '{}' is not supported (llama, qwen2, qwen3 are)", arch);
  }
  if (const gguf::Value* v = file.Find("general.name")) c.name = std::string(v->AsString().value_or(""));

  const std::string p = c.arch_name + ".";
  auto get_int = [&](const char* key) { return file.GetInt(p + key); };
  SG_ASSIGN_OR_RETURN(const std::int64_t n_layers, get_int("block_count"));
  SG_ASSIGN_OR_RETURN(const std::int64_t n_embd, get_int("embedding_length"));
  SG_ASSIGN_OR_RETURN(const std::int64_t n_heads, get_int("attention.head_count"));
  SG_ASSIGN_OR_RETURN(const std::int64_t n_kv_heads,
                      file.GetIntOr(p + "attention.head_count_kv", n_heads));
  SG_ASSIGN_OR_RETURN(const std::int64_t n_ff, get_int("feed_forward_length"));
  SG_ASSIGN_OR_RETURN(c.n_ctx_train, get_int("context_length"));
  if (n_layers <= 0 || n_layers > 1024 || n_embd <= 0 || n_embd > (1 << 16) || n_heads <= 0 ||
      n_heads > 1024 || n_kv_heads <= 0 || n_ff <= 0 || n_ff > (1 << 20) || c.n_ctx_train <= 0) {
    return InvalidArgument("implausible hyper-parameters: {} layers, n_embd {}, {} heads, {} kv "
                           "heads, ffn {}, context {}", n_layers, n_embd, n_heads, n_kv_heads,
                           n_ff, c.n_ctx_train);
  }
  if (n_heads % n_kv_heads != 0) {
    return InvalidArgument("{} heads are not a multiple of {} KV heads", n_heads, n_kv_heads);
  }
  c.n_layers = static_cast<int>(n_layers);
  c.n_embd = static_cast<int>(n_embd);
  c.n_heads = static_cast<int>(n_heads);
  c.n_kv_heads = static_cast<int>(n_kv_heads);
  c.n_ff = static_cast<int>(n_ff);

  SG_ASSIGN_OR_RETURN(const std::int64_t head_dim,
                      file.GetIntOr(p + "attention.key_length", n_embd / n_heads));
  SG_ASSIGN_OR_RETURN(const std::int64_t v_dim,
                      file.GetIntOr(p + "attention.value_length", head_dim));
  if (head_dim <= 0 || head_dim > 1024 || head_dim % 2 != 0 || v_dim != head_dim) {
    return InvalidArgument("head_dim {} (value length {}) is not supported", head_dim, v_dim);
  }
  c.head_dim = static_cast<int>(head_dim);
  SG_ASSIGN_OR_RETURN(const std::int64_t n_rot, file.GetIntOr(p + "rope.dimension_count", head_dim));
  if (n_rot <= 0 || n_rot > head_dim || n_rot % 2 != 0) {
    return InvalidArgument("rope.dimension_count {} does not fit head_dim {}", n_rot, head_dim);
  }
  SG_ASSIGN_OR_RETURN(const double freq_base, file.GetFloatOr(p + "rope.freq_base", 10000.0));
  SG_ASSIGN_OR_RETURN(const double eps,
                      file.GetFloatOr(p + "attention.layer_norm_rms_epsilon", 1e-5));
  if (const gguf::Value* scaling = file.Find(p + "rope.scaling.type")) {
    const auto type = scaling->AsString().value_or("");
    if (type != "none") return Unimplemented("rope scaling '{}' is not supported", type);
  }
  if (file.FindTensor("rope_freqs.weight") != nullptr) {
    return Unimplemented("rope_freqs (Llama 3.1 rope scaling) is not supported yet");
  }
  c.rms_eps = static_cast<float>(eps);
  c.rope.head_dim = c.head_dim;
  c.rope.n_rot = static_cast<int>(n_rot);
  c.rope.freq_base = static_cast<float>(freq_base);
  c.rope.style = c.arch == Arch::kLlama ? kernels::RopeStyle::kNorm : kernels::RopeStyle::kNeox;

  const gguf::TensorInfo* embd = file.FindTensor("token_embd.weight");
  if (embd == nullptr) return NotFound("tensor 'token_embd.weight' is missing");
  if (embd->ne.size() != 2 || embd->ne[0] != n_embd) {
    return InvalidArgument("token_embd.weight has shape [{}], expected [{}, n_vocab]",
                           fmt::join(embd->ne, ", "), n_embd);
  }
  c.n_vocab = static_cast<int>(embd->ne[1]);
  c.tied_output = file.FindTensor("output.weight") == nullptr;
  return c;
}

}  // namespace smartgen::model
