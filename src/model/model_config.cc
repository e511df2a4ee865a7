#include "model/model_config.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/quant.h"

namespace smartgen::model {
namespace {

// Plausibility bounds of the metadata (far beyond any released model, well inside what the
// engine's int/float arithmetic handles).
constexpr std::int64_t kMaxContext = std::int64_t{1} << 24;
constexpr double kMaxRopeBase = 1e12;
constexpr double kMaxScale = 1e4;

Status OutOfBounds(const std::string& key, double v, double lo, double hi) {
  return InvalidArgument("metadata '{}' = {} is outside [{}, {}]", key, v, lo, hi);
}

Status CheckInt(const std::string& key, std::int64_t v, std::int64_t lo, std::int64_t hi) {
  if (v < lo || v > hi) return OutOfBounds(key, static_cast<double>(v), lo, hi);
  return Status::Ok();
}

// Finite and in (0, hi].
Status CheckPositive(const std::string& key, double v, double hi) {
  if (!std::isfinite(v) || v <= 0.0 || v > hi) {
    return InvalidArgument("metadata '{}' = {} must be finite and in (0, {}]", key, v, hi);
  }
  return Status::Ok();
}

// The layers llama.cpp makes sliding-window: with a period n, layer l is local iff
// l % n < n - 1 (gemma2: n = 2, gemma3: n = 6); an array of bools gives each layer's flag.
Result<std::vector<bool>> SlidingLayers(const gguf::GgufFile& file, const std::string& p,
                                        int n_layers, std::int64_t default_period) {
  std::vector<bool> sliding(static_cast<std::size_t>(n_layers));
  const std::string key = p + "attention.sliding_window_pattern";
  const gguf::Value* v = file.Find(key);
  if (v != nullptr && v->is_array()) {
    SG_ASSIGN_OR_RETURN(auto flags, v->AsArray());
    if (flags.size() != sliding.size()) {
      return InvalidArgument("metadata '{}' has {} entries for {} layers", key, flags.size(),
                             n_layers);
    }
    for (std::size_t l = 0; l < flags.size(); ++l) {
      SG_ASSIGN_OR_RETURN(sliding[l], flags[l].AsBool());
    }
    return sliding;
  }
  SG_ASSIGN_OR_RETURN(const std::int64_t period, file.GetIntOr(key, default_period));
  SG_RETURN_IF_ERROR(CheckInt(key, period, 0, 1 << 16));
  for (int l = 0; l < n_layers; ++l) sliding[l] = period == 0 || l % period < period - 1;
  return sliding;
}

// Llama 3.1's rope_freqs tensor: [n_rot / 2] finite positive f32 divisors.
Result<std::shared_ptr<const std::vector<float>>> RopeFreqFactors(const gguf::GgufFile& file,
                                                                  int n_rot) {
  const gguf::TensorInfo* t = file.FindTensor("rope_freqs.weight");
  if (t == nullptr) return std::shared_ptr<const std::vector<float>>();
  if (t->ne.size() != 1 || t->ne[0] != n_rot / 2) {
    return InvalidArgument("tensor 'rope_freqs.weight' has shape [{}], expected [{}]",
                           fmt::join(t->ne, ", "), n_rot / 2);
  }
  auto factors = std::make_shared<std::vector<float>>(static_cast<std::size_t>(n_rot / 2));
  if (!kernels::DequantizeRow(t->type, t->data.data(), factors->data(), n_rot / 2)) {
    return InvalidArgument("tensor 'rope_freqs.weight' has type {}, which cannot be read as f32",
                           gguf::GetTypeInfo(t->type).name);
  }
  for (float f : *factors) {
    SG_RETURN_IF_ERROR(CheckPositive("rope_freqs.weight", f, kMaxScale));
  }
  return std::shared_ptr<const std::vector<float>>(std::move(factors));
}

}  // namespace

bool ModelConfig::IsSlidingLayer(int layer) const {
  return layer >= 0 && layer < static_cast<int>(layers.size()) && layers[layer].sliding;
}

int ModelConfig::LayerWindow(int layer) const {
  return IsSlidingLayer(layer) ? layers[layer].window : 0;
}

std::int64_t ModelConfig::LayerKvStart(int layer, std::int64_t pos) const {
  const int window = LayerWindow(layer);
  return window > 0 && pos - window + 1 > 0 ? pos - window + 1 : 0;
}

const kernels::RopeConfig& ModelConfig::LayerRope(int layer) const {
  return layer >= 0 && layer < static_cast<int>(layers.size()) ? layers[layer].rope : rope;
}

float ModelConfig::AttentionScale() const {
  return attn_scale > 0.0f ? attn_scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
}

kernels::AttentionParams ModelConfig::LayerAttention(int layer, kernels::KvDType dtype) const {
  kernels::AttentionParams p{head_dim, n_group(), AttentionScale(), dtype};
  p.window = LayerWindow(layer);
  p.softcap = attn_softcap;
  return p;
}

std::string ModelConfig::ToString() const {
  int n_sliding = 0;
  for (const LayerConfig& l : layers) n_sliding += l.sliding ? 1 : 0;
  return fmt::format(
      "arch {} ({}), {} layers, n_embd {}, {} heads / {} kv heads, head_dim {}, ffn {}, vocab {}, "
      "ctx {}, rope {} base {} n_rot {}{}{}, rms_eps {}{}{}{}{}{}{}",
      arch_name, name, n_layers, n_embd, n_heads, n_kv_heads, head_dim, n_ff, n_vocab,
      n_ctx_train, rope.style == kernels::RopeStyle::kNeox ? "neox" : "norm", rope.freq_base,
      rope.n_rot, rope.freq_scale != 1.0f ? fmt::format(" scale {}", rope.freq_scale) : "",
      rope_freq_factors ? " rope_freqs" : "", rms_eps, tied_output ? ", tied output" : "",
      has_qkv_bias ? ", qkv bias" : "", has_qk_norm ? ", qk norm" : "",
      ffn_act == FfnActivation::kGelu ? ", geglu" : "",
      n_sliding > 0 ? fmt::format(", {} sliding-window layers (window {})", n_sliding,
                                  sliding_window)
                    : "",
      attn_softcap > 0 || final_softcap > 0
          ? fmt::format(", softcap {} / {}", attn_softcap, final_softcap)
          : "");
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
  } else if (arch == "phi3") {
    c.arch = Arch::kPhi3;
    c.fused_qkv = true;
    c.fused_gate_up = true;
  } else if (arch == "gemma2" || arch == "gemma3") {
    c.arch = arch == "gemma2" ? Arch::kGemma2 : Arch::kGemma3;
    c.has_qk_norm = c.arch == Arch::kGemma3;
    c.post_norms = true;
    c.ffn_act = FfnActivation::kGelu;
  } else {
    return Unimplemented(
        "architecture '{}' is not supported (llama, qwen2, qwen3, phi3, gemma2, gemma3 are)", arch);
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
  SG_RETURN_IF_ERROR(CheckInt(p + "block_count", n_layers, 1, 1024));
  SG_RETURN_IF_ERROR(CheckInt(p + "embedding_length", n_embd, 1, 1 << 16));
  SG_RETURN_IF_ERROR(CheckInt(p + "attention.head_count", n_heads, 1, 1024));
  SG_RETURN_IF_ERROR(CheckInt(p + "attention.head_count_kv", n_kv_heads, 1, n_heads));
  SG_RETURN_IF_ERROR(CheckInt(p + "feed_forward_length", n_ff, 1, 1 << 20));
  SG_RETURN_IF_ERROR(CheckInt(p + "context_length", c.n_ctx_train, 1, kMaxContext));
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
  SG_RETURN_IF_ERROR(CheckPositive(p + "rope.freq_base", freq_base, kMaxRopeBase));
  SG_ASSIGN_OR_RETURN(const double eps,
                      file.GetFloatOr(p + "attention.layer_norm_rms_epsilon", 1e-5));
  SG_RETURN_IF_ERROR(CheckPositive(p + "attention.layer_norm_rms_epsilon", eps, 1.0));
  double freq_scale = 1.0;
  if (const gguf::Value* scaling = file.Find(p + "rope.scaling.type")) {
    const auto type = scaling->AsString().value_or("");
    if (type == "linear") {
      SG_ASSIGN_OR_RETURN(const double factor, file.GetFloatOr(p + "rope.scaling.factor", 1.0));
      SG_RETURN_IF_ERROR(CheckPositive(p + "rope.scaling.factor", factor, kMaxScale));
      freq_scale = 1.0 / factor;
    } else if (type != "none") {
      return Unimplemented("rope scaling '{}' is not supported (linear and Llama 3.1's "
                           "rope_freqs are)", type);
    }
  }
  SG_ASSIGN_OR_RETURN(c.rope_freq_factors, RopeFreqFactors(file, static_cast<int>(n_rot)));
  if (file.FindTensor("rope_factors_long.weight") != nullptr ||
      file.FindTensor("rope_factors_short.weight") != nullptr) {
    return Unimplemented("LongRoPE (rope_factors_long / rope_factors_short, Phi-3 128k) is not "
                         "supported");
  }
  c.rms_eps = static_cast<float>(eps);
  c.rope.head_dim = c.head_dim;
  c.rope.n_rot = static_cast<int>(n_rot);
  c.rope.freq_base = static_cast<float>(freq_base);
  c.rope.freq_scale = static_cast<float>(freq_scale);
  c.rope.freq_factors = c.rope_freq_factors ? c.rope_freq_factors->data() : nullptr;
  c.rope.style = c.arch == Arch::kLlama ? kernels::RopeStyle::kNorm : kernels::RopeStyle::kNeox;

  // Gemma: local (sliding-window) layers, soft-capping, scales.
  std::vector<bool> sliding(static_cast<std::size_t>(c.n_layers), false);
  kernels::RopeConfig local_rope = c.rope;
  if (c.arch == Arch::kGemma2 || c.arch == Arch::kGemma3) {
    const bool g2 = c.arch == Arch::kGemma2;
    SG_ASSIGN_OR_RETURN(const std::int64_t window,
                        file.GetIntOr(p + "attention.sliding_window", g2 ? 4096 : 0));
    SG_RETURN_IF_ERROR(CheckInt(p + "attention.sliding_window", window, 0, kMaxContext));
    c.sliding_window = static_cast<int>(window);
    if (window > 0) {
      SG_ASSIGN_OR_RETURN(sliding, SlidingLayers(file, p, c.n_layers, g2 ? 2 : 6));
    }
    if (g2) {
      SG_ASSIGN_OR_RETURN(const double attn_cap, file.GetFloatOr(p + "attn_logit_softcapping", 50.0));
      SG_ASSIGN_OR_RETURN(const double final_cap,
                          file.GetFloatOr(p + "final_logit_softcapping", 30.0));
      SG_RETURN_IF_ERROR(CheckPositive(p + "attn_logit_softcapping", attn_cap, kMaxScale));
      SG_RETURN_IF_ERROR(CheckPositive(p + "final_logit_softcapping", final_cap, kMaxScale));
      c.attn_softcap = static_cast<float>(attn_cap);
      c.final_softcap = static_cast<float>(final_cap);
    } else {
      SG_ASSIGN_OR_RETURN(const double base_swa, file.GetFloatOr(p + "rope.freq_base_swa", 10000.0));
      SG_RETURN_IF_ERROR(CheckPositive(p + "rope.freq_base_swa", base_swa, kMaxRopeBase));
      local_rope.freq_base = static_cast<float>(base_swa);
      local_rope.freq_scale = 1.0f;  // linear scaling applies to the global layers only
    }
    c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
    // llama.cpp scales queries by 1/sqrt(n_embd / n_heads) for the 27B models (46 and 62
    // layers), by 1/sqrt(head_dim) otherwise.
    const bool is_27b = c.n_layers == (g2 ? 46 : 62);
    c.attn_scale = 1.0f / std::sqrt(static_cast<float>(is_27b ? c.n_embd / c.n_heads : c.head_dim));
  }
  c.layers.resize(static_cast<std::size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    LayerConfig& layer = c.layers[l];
    layer.sliding = sliding[l];
    layer.window = sliding[l] ? c.sliding_window : 0;
    layer.rope = sliding[l] ? local_rope : c.rope;
  }

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
