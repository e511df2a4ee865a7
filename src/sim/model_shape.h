// ModelShape: what the simulator needs to know about a model, and what it derives from it.
//
// The typed-in part is only the architecture's hyper-parameters (as in a GGUF's metadata or
// an HF config.json): layers, widths, heads, KV heads, head_dim, FFN width, vocabulary, and
// the sliding-window layout. Everything the simulation uses is derived here:
//   - KV bytes of n prompt tokens per layer: 2 (K, V) x n_kv_heads x head_dim x dtype bytes x
//     n tokens, where a sliding-window layer holds only the last `sliding_window` tokens;
//   - parameters per layer (Wq, Wk, Wv, Wo, gate, up, down) and weight bytes;
//   - FLOPs: 2 per parameter per token for the linear layers, 4 x q_dim per (query, key) pair
//     for attention (QK^T and AV), causal in prefill.
// Sources: ModelShapeByName (published configs, cited in model_shape.cc), ModelShapeFromGguf
// (any GGUF's metadata; weight bytes are the file's tensor bytes), FromModelPreset
// (model/presets.h, the shapes `make-model` writes).
//
// Thread-safety: plain data.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/result.h"
#include "model/model_config.h"
#include "model/presets.h"
#include "select/needed_blocks.h"

namespace smartgen::sim {

struct ModelShape {
  std::string name;
  int n_layers = 0;
  int n_embd = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int n_ff = 0;
  int n_vocab = 0;
  bool tied_output = false;
  // Sliding-window attention: 0 = none. With a window, layer l is global when
  // (l + 1) % sliding_period == 0 and sliding otherwise (Gemma 3: window 1024, period 6,
  // i.e. 5 local : 1 global); sliding_period 0 makes every layer sliding.
  int sliding_window = 0;
  int sliding_period = 0;
  double kv_dtype_bytes = 2;      // f16 KV
  double weight_bytes_per_param = 2;  // bf16/f16 weights unless read from a GGUF
  double weight_bytes_override = 0;   // > 0: total weight bytes measured from a file
  std::string source;             // where the hyper-parameters come from

  int q_dim() const { return n_heads * head_dim; }
  int kv_dim() const { return n_kv_heads * head_dim; }
  bool Sliding(int layer) const;
  int n_sliding_layers() const;
  // Tokens of an n-token context whose KV layer `layer` keeps.
  std::int64_t LayerKvTokens(int layer, std::int64_t n) const;
  // KV bytes of one token in one (non-sliding) layer, all KV heads, K and V.
  double KvBytesPerTokenLayer() const { return 2.0 * kv_dim() * kv_dtype_bytes; }
  // KV bytes of an n-token context in `layer` / in all layers.
  double LayerKvBytes(int layer, std::int64_t n) const;
  double KvBytes(std::int64_t n) const;
  // Parameters of one transformer layer (attention and FFN matrices; norms are negligible).
  double LayerParams() const;
  double EmbeddingParams() const { return static_cast<double>(n_embd) * n_vocab; }
  // Bytes of weights one decode step streams: every layer plus the output matrix.
  double LayerWeightBytes() const;
  double OutputWeightBytes() const;
  double WeightBytes() const;
  // Linear-layer FLOPs of one token in one layer.
  double LayerLinearFlopsPerToken() const { return 2.0 * LayerParams(); }
  double OutputFlopsPerToken() const { return 2.0 * EmbeddingParams(); }
  // Attention FLOPs of prefilling tokens [0, n) in `layer` (causal, window-limited).
  double LayerPrefillAttentionFlops(int layer, std::int64_t n) const;
  // FLOPs of a whole n-token prefill (every layer, output head for the last token only).
  double PrefillFlops(std::int64_t n) const;
  std::string ToString() const;
  // The attention layout as the nodes' model::ModelConfig holds it: layers, widths, heads, KV
  // heads, head_dim and, per layer, whether it slides and its window (ReadModelConfig's
  // pattern). What the node policies (select/) read; no RoPE or norms.
  model::ModelConfig AttentionConfig() const;
};

// What the decode of an n-token prompt needs, in blocks of block_tokens: the nodes' rule
// (select::PromptNeededBlocks on AttentionConfig()). window_aware false: every block.
select::NeededBlocks NeededBlocksFor(const ModelShape& shape, int block_tokens, std::int64_t n,
                                     bool window_aware);

// The models of the paper's setup and the project's default: "llama-3.1-8b", "qwen3-8b",
// "qwen3-14b", "phi-4-14b", "gemma-3-12b", and every model/presets.h preset (e.g.
// "smollm2-135m"). kNotFound lists the names.
Result<ModelShape> ModelShapeByName(std::string_view name);
std::span<const std::string_view> NamedModelShapes();
ModelShape FromModelPreset(const model::ModelPreset& preset);
// Reads the hyper-parameters from `path`'s metadata (<arch>.block_count, embedding_length,
// attention.head_count[_kv], attention.key_length, feed_forward_length,
// attention.sliding_window; the vocabulary from token_embd) and the weight bytes from its
// tensors. gemma2's alternating and gemma3's 5:1 local/global patterns are llama.cpp's
// (they are not in the metadata).
Result<ModelShape> ModelShapeFromGguf(const std::string& path);

}  // namespace smartgen::sim
