// ModelConfig: the hyper-parameters of a Llama-family model, read from GGUF metadata.
//
// Supported architectures (general.architecture):
//   llama - Llama 2/3, SmolLM2, TinyLlama: GQA, NORM RoPE (adjacent pairs), tied or untied output.
//   qwen2 - as llama plus Q/K/V biases, NEOX RoPE.
//   qwen3 - as llama plus per-head RMSNorm of Q and K before RoPE, NEOX RoPE, head_dim may
//           differ from n_embd / n_heads (attention.key_length).
#pragma once

#include <cstdint>
#include <string>

#include "core/result.h"
#include "gguf/gguf_reader.h"
#include "kernels/rope.h"

namespace smartgen::model {

enum class Arch { kLlama, kQwen2, kQwen3 };

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
  kernels::RopeConfig rope;  // head_dim, n_rot, freq_base, style
  bool tied_output = false;
  bool has_qkv_bias = false;
  bool has_qk_norm = false;

  int n_group() const { return n_heads / n_kv_heads; }  // query heads per KV head
  int q_dim() const { return n_heads * head_dim; }
  int kv_dim() const { return n_kv_heads * head_dim; }
  std::string ToString() const;
};

// Reads and validates the hyper-parameters. kUnimplemented for an unsupported architecture,
// kInvalidArgument for inconsistent values (e.g. heads not divisible by KV heads).
// n_vocab is taken from token_embd's shape.
Result<ModelConfig> ReadModelConfig(const gguf::GgufFile& file);

}  // namespace smartgen::model
