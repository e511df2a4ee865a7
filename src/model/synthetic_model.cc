#include "model/synthetic_model.h"

#include <cctype>
#include <cmath>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "gguf/gguf_writer.h"
#include "kernels/quant.h"
#include "tokenizer/synthetic_vocab.h"

namespace smartgen::model {
namespace {

// Deterministic standard normals: splitmix64 + Box-Muller. Fast enough for 10^9 draws and the
// same on every platform (unlike std::normal_distribution).
class NormalStream {
 public:
  explicit NormalStream(std::uint64_t seed) : state_(seed) {}
  float Next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = (static_cast<double>(NextU64() >> 11) + 0.5) * 0x1.0p-53;
    const double u2 = static_cast<double>(NextU64() >> 11) * 0x1.0p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = static_cast<float>(r * std::sin(2.0 * M_PI * u2));
    has_spare_ = true;
    return static_cast<float>(r * std::cos(2.0 * M_PI * u2));
  }

 private:
  std::uint64_t NextU64() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::uint64_t state_;
  bool has_spare_ = false;
  float spare_ = 0;
};

}  // namespace

Status WriteSyntheticModel(const SyntheticModelSpec& o) {
  const ModelPreset* p = &o.preset;
  const gguf::GgmlType type = o.type;
  const QuantRecipe recipe = o.recipe != QuantRecipe::kNone ? o.recipe
                             : o.q4_k_m                      ? QuantRecipe::kQ4_K_M
                                                             : QuantRecipe::kNone;
  if (!gguf::IsSupportedWeightType(type)) {
    return InvalidArgument("weight type {} is not one smartgen computes with",
                           gguf::GetTypeInfo(type).name);
  }
  if (o.out.empty()) return InvalidArgument("no output path");
  // Before the weights are made (seconds for the larger shapes), not when they are written.
  const std::filesystem::path dir = std::filesystem::path(o.out).parent_path();
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec)) {
    return NotFound("output directory '{}' of {} does not exist", dir.string(), o.out);
  }

  gguf::GgufWriter w;
  const std::string arch(p->arch);
  const std::string k = arch + ".";
  w.AddString("general.architecture", arch);
  w.AddString("general.name", fmt::format("smartgen-{}-random-seed{}", p->name, o.seed));
  w.AddUint32("general.file_type", RecipeFileType(recipe, type));
  w.AddUint32(k + "block_count", p->n_layers);
  w.AddUint32(k + "context_length", p->n_ctx);
  w.AddUint32(k + "embedding_length", p->n_embd);
  w.AddUint32(k + "feed_forward_length", p->n_ff);
  w.AddUint32(k + "attention.head_count", p->n_heads);
  w.AddUint32(k + "attention.head_count_kv", p->n_kv_heads);
  if (p->head_dim * p->n_heads != p->n_embd) {
    w.AddUint32(k + "attention.key_length", p->head_dim);
    w.AddUint32(k + "attention.value_length", p->head_dim);
  }
  w.AddUint32(k + "rope.dimension_count", p->head_dim);
  w.AddFloat32(k + "rope.freq_base", p->rope_base);
  w.AddFloat32(k + "attention.layer_norm_rms_epsilon", p->rms_eps);
  const bool gemma = arch == "gemma2" || arch == "gemma3", phi3 = arch == "phi3";
  if (gemma) w.AddUint32(k + "attention.sliding_window", static_cast<std::uint32_t>(p->sliding_window));
  if (arch == "gemma3") w.AddFloat32(k + "rope.freq_base_swa", p->rope_base_swa);
  if (arch == "gemma2") {
    w.AddFloat32(k + "attn_logit_softcapping", 50.0f);
    w.AddFloat32(k + "final_logit_softcapping", 30.0f);
  }
  SG_RETURN_IF_ERROR(tokenizer::WriteSyntheticByteVocab(w, p->n_vocab));

  NormalStream rng(o.seed);
  std::vector<float> values;
  std::vector<std::byte> bytes;
  // Weights are drawn in file order: matrices N(0, 0.02^2), norms 1 + N(0, 0.05^2).
  auto matrix = [&](const std::string& name, int rows, int cols, gguf::GgmlType t) -> Status {
    t = RecipeTensorType(recipe, t, name, p->n_layers, cols, p->tied_output);
    if (cols % gguf::GetTypeInfo(t).block_size != 0) {
      return InvalidArgument("{}: rows of {} are not a multiple of {}'s {}-element blocks (a "
                             "recipe such as q4_k_m falls back where they are not)",
                             name, cols, gguf::GetTypeInfo(t).name, gguf::GetTypeInfo(t).block_size);
    }
    values.resize(static_cast<std::size_t>(cols));
    const std::size_t row_bytes = gguf::RowBytes(t, cols);
    bytes.resize(row_bytes * rows);
    for (int r = 0; r < rows; ++r) {
      for (float& v : values) v = 0.02f * rng.Next();
      if (!kernels::QuantizeRow(t, values.data(), bytes.data() + r * row_bytes, cols)) {
        return Unimplemented("cannot write weights of type {}", gguf::GetTypeInfo(t).name);
      }
    }
    const std::int64_t ne[] = {cols, rows};
    return w.AddTensor(name, ne, t, bytes);
  };
  auto vector = [&](const std::string& name, int n, float base, float scale) -> Status {
    values.resize(static_cast<std::size_t>(n));
    for (float& v : values) v = base + scale * rng.Next();
    const std::int64_t ne[] = {n};
    return w.AddTensor(name, ne, gguf::GgmlType::kF32, std::as_bytes(std::span(values)));
  };

  const int q_dim = p->n_heads * p->head_dim, kv_dim = p->n_kv_heads * p->head_dim;
  SG_RETURN_IF_ERROR(matrix("token_embd.weight", p->n_vocab, p->n_embd, type));
  SG_RETURN_IF_ERROR(vector("output_norm.weight", p->n_embd, 1.0f, 0.05f));
  if (!p->tied_output) SG_RETURN_IF_ERROR(matrix("output.weight", p->n_vocab, p->n_embd, type));
  for (int l = 0; l < p->n_layers; ++l) {
    const std::string b = fmt::format("blk.{}.", l);
    SG_RETURN_IF_ERROR(vector(b + "attn_norm.weight", p->n_embd, 1.0f, 0.05f));
    if (phi3) {
      SG_RETURN_IF_ERROR(matrix(b + "attn_qkv.weight", q_dim + 2 * kv_dim, p->n_embd, type));
    } else {
      SG_RETURN_IF_ERROR(matrix(b + "attn_q.weight", q_dim, p->n_embd, type));
      SG_RETURN_IF_ERROR(matrix(b + "attn_k.weight", kv_dim, p->n_embd, type));
      SG_RETURN_IF_ERROR(matrix(b + "attn_v.weight", kv_dim, p->n_embd, type));
    }
    if (arch == "qwen2") {
      SG_RETURN_IF_ERROR(vector(b + "attn_q.bias", q_dim, 0.0f, 0.02f));
      SG_RETURN_IF_ERROR(vector(b + "attn_k.bias", kv_dim, 0.0f, 0.02f));
      SG_RETURN_IF_ERROR(vector(b + "attn_v.bias", kv_dim, 0.0f, 0.02f));
    }
    if (arch == "qwen3" || arch == "gemma3") {
      SG_RETURN_IF_ERROR(vector(b + "attn_q_norm.weight", p->head_dim, 1.0f, 0.05f));
      SG_RETURN_IF_ERROR(vector(b + "attn_k_norm.weight", p->head_dim, 1.0f, 0.05f));
    }
    SG_RETURN_IF_ERROR(matrix(b + "attn_output.weight", p->n_embd, q_dim, type));
    if (gemma) SG_RETURN_IF_ERROR(vector(b + "post_attention_norm.weight", p->n_embd, 1.0f, 0.05f));
    SG_RETURN_IF_ERROR(vector(b + "ffn_norm.weight", p->n_embd, 1.0f, 0.05f));
    if (phi3) {
      SG_RETURN_IF_ERROR(matrix(b + "ffn_up.weight", 2 * p->n_ff, p->n_embd, type));  // gate | up
    } else {
      SG_RETURN_IF_ERROR(matrix(b + "ffn_gate.weight", p->n_ff, p->n_embd, type));
      SG_RETURN_IF_ERROR(matrix(b + "ffn_up.weight", p->n_ff, p->n_embd, type));
    }
    SG_RETURN_IF_ERROR(matrix(b + "ffn_down.weight", p->n_embd, p->n_ff, type));
    if (gemma) SG_RETURN_IF_ERROR(vector(b + "post_ffw_norm.weight", p->n_embd, 1.0f, 0.05f));
  }
  return w.WriteFile(o.out);
}

bool ParseSyntheticType(std::string_view name, SyntheticModelSpec* spec) {
  struct Named {
    std::string_view name;
    QuantRecipe recipe;
    gguf::GgmlType base;
  };
  for (const Named& r : {Named{"q3_k_m", QuantRecipe::kQ3_K_M, gguf::GgmlType::kQ3_K},
                         Named{"q4_k_m", QuantRecipe::kQ4_K_M, gguf::GgmlType::kQ4_K},
                         Named{"q5_k_m", QuantRecipe::kQ5_K_M, gguf::GgmlType::kQ5_K}}) {
    std::string lower(name);
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (lower == r.name) {
      spec->type = r.base;
      spec->recipe = r.recipe;
      spec->q4_k_m = r.recipe == QuantRecipe::kQ4_K_M;
      return true;
    }
  }
  spec->recipe = QuantRecipe::kNone;
  spec->q4_k_m = false;
  return gguf::ParseGgmlType(name, &spec->type) && gguf::IsSupportedWeightType(spec->type);
}

}  // namespace smartgen::model
