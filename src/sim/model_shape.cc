#include "sim/model_shape.h"

#include <fmt/format.h>

#include <algorithm>

#include "gguf/gguf_reader.h"

namespace smartgen::sim {
namespace {

struct NamedShape {
  std::string_view name;
  int n_layers, n_embd, n_heads, n_kv_heads, head_dim, n_ff, n_vocab;
  bool tied;
  int sliding_window, sliding_period;
  std::string_view source;
};

// Hyper-parameters from each model's published config.json on Hugging Face.
constexpr NamedShape kShapes[] = {
    {"llama-3.1-8b", 32, 4096, 32, 8, 128, 14336, 128256, false, 0, 0,
     "meta-llama/Llama-3.1-8B config.json"},
    {"qwen3-8b", 36, 4096, 32, 8, 128, 12288, 151936, false, 0, 0, "Qwen/Qwen3-8B config.json"},
    {"qwen3-14b", 40, 5120, 40, 8, 128, 17408, 151936, false, 0, 0,
     "Qwen/Qwen3-14B config.json"},
    {"phi-4-14b", 40, 5120, 40, 10, 128, 17920, 100352, false, 0, 0,
     "microsoft/phi-4 config.json"},
    // sliding_window 1024, sliding_window_pattern 6 (text_config).
    {"gemma-3-12b", 48, 3840, 16, 8, 256, 15360, 262208, true, 1024, 6,
     "google/gemma-3-12b-it config.json (text_config)"},
};

constexpr std::string_view kModelNames[] = {"llama-3.1-8b", "qwen3-8b",    "qwen3-14b",
                                       "phi-4-14b",    "gemma-3-12b", "smollm2-135m"};

}  // namespace

bool ModelShape::Sliding(int layer) const {
  if (sliding_window <= 0) return false;
  if (sliding_period <= 0) return true;
  return (layer + 1) % sliding_period != 0;
}

int ModelShape::n_sliding_layers() const {
  int n = 0;
  for (int l = 0; l < n_layers; ++l) n += Sliding(l) ? 1 : 0;
  return n;
}

std::int64_t ModelShape::LayerKvTokens(int layer, std::int64_t n) const {
  return Sliding(layer) ? std::min<std::int64_t>(n, sliding_window) : n;
}

double ModelShape::LayerKvBytes(int layer, std::int64_t n) const {
  return KvBytesPerTokenLayer() * static_cast<double>(LayerKvTokens(layer, n));
}

double ModelShape::KvBytes(std::int64_t n) const {
  double b = 0;
  for (int l = 0; l < n_layers; ++l) b += LayerKvBytes(l, n);
  return b;
}

double ModelShape::LayerParams() const {
  const double attn = 2.0 * n_embd * q_dim() + 2.0 * n_embd * kv_dim();
  const double ffn = 3.0 * n_embd * n_ff;
  return attn + ffn;
}

double ModelShape::LayerWeightBytes() const {
  if (weight_bytes_override > 0) {
    const double total_params = n_layers * LayerParams() + EmbeddingParams();
    return weight_bytes_override * LayerParams() / total_params;
  }
  return LayerParams() * weight_bytes_per_param;
}

double ModelShape::OutputWeightBytes() const {
  if (weight_bytes_override > 0) {
    const double total_params = n_layers * LayerParams() + EmbeddingParams();
    return weight_bytes_override * EmbeddingParams() / total_params;
  }
  return EmbeddingParams() * weight_bytes_per_param;
}

double ModelShape::WeightBytes() const { return n_layers * LayerWeightBytes() + OutputWeightBytes(); }

double ModelShape::LayerPrefillAttentionFlops(int layer, std::int64_t n) const {
  // Query i attends to min(i + 1, window) keys.
  const double nd = static_cast<double>(n);
  double pairs = nd * (nd + 1) / 2;
  if (Sliding(layer) && n > sliding_window) {
    const double w = sliding_window;
    pairs = w * (w + 1) / 2 + (nd - w) * w;
  }
  return 4.0 * q_dim() * pairs;
}

double ModelShape::PrefillFlops(std::int64_t n) const {
  double f = OutputFlopsPerToken();
  for (int l = 0; l < n_layers; ++l) {
    f += LayerLinearFlopsPerToken() * static_cast<double>(n) + LayerPrefillAttentionFlops(l, n);
  }
  return f;
}

std::string ModelShape::ToString() const {
  return fmt::format(
      "{}: {} layers ({} sliding, window {}), embd {}, heads {}/{} x {}, ffn {}, vocab {}, "
      "KV {:.1f} KiB/token, {:.2f} B params, weights {:.2f} GB ({})",
      name, n_layers, n_sliding_layers(), sliding_window, n_embd, n_heads, n_kv_heads, head_dim,
      n_ff, n_vocab, KvBytesPerTokenLayer() * n_layers / 1024.0,
      (n_layers * LayerParams() + EmbeddingParams() * (tied_output ? 1 : 2)) / 1e9,
      WeightBytes() / 1e9, source);
}

model::ModelConfig ModelShape::AttentionConfig() const {
  model::ModelConfig c;
  c.name = name;
  c.n_layers = n_layers;
  c.n_embd = n_embd;
  c.n_heads = n_heads;
  c.n_kv_heads = n_kv_heads;
  c.head_dim = head_dim;
  c.n_ff = n_ff;
  c.n_vocab = n_vocab;
  c.tied_output = tied_output;
  c.sliding_window = sliding_window;
  c.layers.resize(static_cast<std::size_t>(std::max(0, n_layers)));
  for (int l = 0; l < n_layers; ++l) {
    c.layers[l].sliding = Sliding(l);
    c.layers[l].window = Sliding(l) ? sliding_window : 0;
  }
  return c;
}

select::NeededBlocks NeededBlocksFor(const ModelShape& shape, int block_tokens, std::int64_t n,
                                     bool window_aware) {
  return select::PromptNeededBlocks(shape.AttentionConfig(), block_tokens, n, window_aware);
}

std::span<const std::string_view> NamedModelShapes() { return kModelNames; }

ModelShape FromModelPreset(const model::ModelPreset& p) {
  ModelShape s;
  s.name = std::string(p.name);
  s.n_layers = p.n_layers;
  s.n_embd = p.n_embd;
  s.n_heads = p.n_heads;
  s.n_kv_heads = p.n_kv_heads;
  s.head_dim = p.head_dim;
  s.n_ff = p.n_ff;
  s.n_vocab = p.n_vocab;
  s.tied_output = p.tied_output;
  if (p.sliding_window > 0) {
    s.sliding_window = p.sliding_window;
    s.sliding_period = p.arch == "gemma2" ? 2 : p.arch == "gemma3" ? 6 : 0;
  }
  s.source = "model/presets.h";
  return s;
}

Result<ModelShape> ModelShapeByName(std::string_view name) {
  for (const NamedShape& n : kShapes) {
    if (n.name != name) continue;
    ModelShape s;
    s.name = std::string(n.name);
    s.n_layers = n.n_layers;
    s.n_embd = n.n_embd;
    s.n_heads = n.n_heads;
    s.n_kv_heads = n.n_kv_heads;
    s.head_dim = n.head_dim;
    s.n_ff = n.n_ff;
    s.n_vocab = n.n_vocab;
    s.tied_output = n.tied;
    s.sliding_window = n.sliding_window;
    s.sliding_period = n.sliding_period;
    s.source = std::string(n.source);
    return s;
  }
  if (const model::ModelPreset* p = model::FindPreset(name)) return FromModelPreset(*p);
  std::string names;
  for (std::string_view n : kModelNames) names += fmt::format("{} ", n);
  for (const model::ModelPreset& p : model::AllPresets()) names += fmt::format("{} ", p.name);
  return NotFound("no model shape '{}'; known: {}", name, names);
}

Result<ModelShape> ModelShapeFromGguf(const std::string& path) {
  SG_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::Open(path));
  SG_ASSIGN_OR_RETURN(std::string_view arch, file.GetString("general.architecture"));
  const std::string p = std::string(arch) + ".";
  ModelShape s;
  s.name = std::string(arch);
  if (auto n = file.GetString("general.name"); n.ok()) s.name = std::string(*n);
  SG_ASSIGN_OR_RETURN(const std::int64_t layers, file.GetInt(p + "block_count"));
  SG_ASSIGN_OR_RETURN(const std::int64_t embd, file.GetInt(p + "embedding_length"));
  SG_ASSIGN_OR_RETURN(const std::int64_t heads, file.GetInt(p + "attention.head_count"));
  SG_ASSIGN_OR_RETURN(const std::int64_t kv_heads,
                      file.GetIntOr(p + "attention.head_count_kv", heads));
  SG_ASSIGN_OR_RETURN(const std::int64_t ff, file.GetInt(p + "feed_forward_length"));
  if (layers <= 0 || embd <= 0 || heads <= 0 || kv_heads <= 0 || ff <= 0 || heads % kv_heads) {
    return InvalidArgument("{}: inconsistent hyper-parameters", path);
  }
  SG_ASSIGN_OR_RETURN(const std::int64_t head_dim,
                      file.GetIntOr(p + "attention.key_length", embd / heads));
  SG_ASSIGN_OR_RETURN(const std::int64_t window, file.GetIntOr(p + "attention.sliding_window", 0));
  s.n_layers = static_cast<int>(layers);
  s.n_embd = static_cast<int>(embd);
  s.n_heads = static_cast<int>(heads);
  s.n_kv_heads = static_cast<int>(kv_heads);
  s.head_dim = static_cast<int>(head_dim);
  s.n_ff = static_cast<int>(ff);
  const gguf::TensorInfo* embd_t = file.FindTensor("token_embd.weight");
  if (embd_t == nullptr) return InvalidArgument("{}: no token_embd.weight", path);
  s.n_vocab = static_cast<int>(embd_t->rows());
  s.tied_output = file.FindTensor("output.weight") == nullptr;
  if (window > 0) {
    s.sliding_window = static_cast<int>(window);
    s.sliding_period = arch == "gemma2" ? 2 : arch == "gemma3" ? 6 : 0;
  }
  double bytes = 0;
  for (const gguf::TensorInfo& t : file.tensors()) bytes += static_cast<double>(t.data.size());
  // A tied output matrix is streamed once per step as the embedding's bytes.
  s.weight_bytes_override = bytes;
  s.source = fmt::format("GGUF metadata of {}", path);
  return s;
}

}  // namespace smartgen::sim
