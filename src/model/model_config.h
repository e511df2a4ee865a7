// ModelConfig: the hyper-parameters of a supported decoder-only model, read from GGUF metadata
// and validated by range (a malformed file is a clear error, never a crash or a silent NaN).
//
// Supported architectures (general.architecture):
//   llama  - Llama 2/3, SmolLM2, TinyLlama: GQA, NORM RoPE (adjacent pairs), tied or untied
//            output; Llama 3.1/3.2 rope scaling through the `rope_freqs` tensor; linear scaling.
//   qwen2  - as llama plus Q/K/V biases, NEOX RoPE.
//   qwen3  - as llama plus per-head RMSNorm of Q and K before RoPE, NEOX RoPE, head_dim may
//            differ from n_embd / n_heads (attention.key_length).
//   phi3   - as llama with a fused attn_qkv and a fused gate|up ffn_up, NEOX RoPE (Phi-3, Phi-4;
//            attention.sliding_window is ignored, as llama.cpp does).
//   gemma2 - GeGLU FFN, RMSNorm after attention and after the FFN, embeddings scaled by
//            sqrt(n_embd), attention and final logit soft-capping, sliding-window attention on
//            every other layer (layers 0, 2, ...).
//   gemma3 - as gemma2 without soft-capping, plus per-head q/k RMSNorm; 5 of every 6 layers
//            are sliding-window with their own RoPE base (rope.freq_base_swa) and no scaling.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "gguf/gguf_reader.h"
#include "kernels/attention.h"
#include "kernels/rope.h"

namespace smartgen::model {

enum class Arch { kLlama, kQwen2, kQwen3, kPhi3, kGemma2, kGemma3 };
enum class FfnActivation { kSilu, kGelu };  // down(act(gate) * up): SwiGLU or GeGLU (tanh GELU)

// What differs between the layers of one model.
struct LayerConfig {
  bool sliding = false;      // a sliding-window (local) attention layer
  int window = 0;            // its window: keys at (pos - window, pos]; 0 when not sliding
  kernels::RopeConfig rope;  // this layer's RoPE (gemma3's local layers have their own base)
};

struct ModelConfig {
  Arch arch = Arch::kLlama;
  std::string arch_name;     // general.architecture
  std::string name;          // general.name, if any
  int n_layers = 0;
  int n_embd = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;          // per Q/K/V head
  int n_ff = 0;
  int n_vocab = 0;
  std::int64_t n_ctx_train = 0;
  float rms_eps = 1e-5f;
  kernels::RopeConfig rope;  // the global layers' RoPE (every layer's, for most models)
  bool tied_output = false;
  bool has_qkv_bias = false;
  bool has_qk_norm = false;

  // Architecture features (all off for llama/qwen).
  bool fused_qkv = false;      // phi3: attn_qkv holds q, k, v rows; attn_q/k/v are views of it
  bool fused_gate_up = false;  // phi3: ffn_up holds the gate rows, then the up rows
  bool post_norms = false;     // gemma: post_attention_norm and post_ffw_norm
  FfnActivation ffn_act = FfnActivation::kSilu;
  float embd_scale = 0.0f;     // token embeddings multiplied by this (gemma: sqrt(n_embd)); 0 = 1
  float attn_scale = 0.0f;     // attention score scale; 0 = 1 / sqrt(head_dim)
  float attn_softcap = 0.0f;   // gemma2: scores -> c * tanh(scores / c); 0 = none
  float final_softcap = 0.0f;  // gemma2: logits -> c * tanh(logits / c); 0 = none
  int sliding_window = 0;      // the window of the sliding layers; 0 = none
  // Per layer; empty means every layer is global with `rope` (configs built by hand).
  std::vector<LayerConfig> layers;
  // Llama 3.1 rope_freqs ([n_rot / 2] divisors of the RoPE angles), shared by the copies of
  // this config; the layers' RopeConfig::freq_factors point into it.
  std::shared_ptr<const std::vector<float>> rope_freq_factors;

  int n_group() const { return n_heads / n_kv_heads; }  // query heads per KV head
  int q_dim() const { return n_heads * head_dim; }
  int kv_dim() const { return n_kv_heads * head_dim; }

  // Whether `layer` attends through a sliding window, and its window (0 for a global layer).
  // A sliding layer's decode needs only the last LayerWindow(layer) positions of the KV.
  bool IsSlidingLayer(int layer) const;
  int LayerWindow(int layer) const;
  // The first KV position that a query at `pos` or later attends in `layer`: pos - window + 1
  // for a sliding layer (0 if that is negative), 0 for a global one. A decode that starts
  // after a prompt of n tokens needs only positions [LayerKvStart(layer, n), n) of the prompt.
  std::int64_t LayerKvStart(int layer, std::int64_t pos) const;
  const kernels::RopeConfig& LayerRope(int layer) const;
  // The attention parameters of `layer` (head_dim, group, scale, window, soft-cap) for KV
  // stored in `dtype`: what dense attention over that layer's blocks must use.
  kernels::AttentionParams LayerAttention(int layer, kernels::KvDType dtype) const;
  float AttentionScale() const;
  std::string ToString() const;
};

// Reads and validates the hyper-parameters. kUnimplemented for an unsupported architecture or
// feature (e.g. YaRN), kInvalidArgument for values out of range or inconsistent (e.g. heads not
// divisible by KV heads, a NaN or non-positive epsilon, a context length past 2^24, a RoPE base
// that is not finite and positive), naming the key. n_vocab is taken from token_embd's shape.
Result<ModelConfig> ReadModelConfig(const gguf::GgufFile& file);

}  // namespace smartgen::model
