// Model: a loaded GGUF model: config, weight views into the mapping, and its tokenizer.
//
// Matrix weights are not copied: WeightViews point into the memory-mapped file, which the
// Model keeps open (or into its private copy on huge pages, where Q5_0 and Q8_0 matrices may be
// regrouped in place for the VNNI GEMV: grouped_bytes). Small 1-D tensors (norm weights, biases)
// are converted to owned f32. Load() validates every tensor's presence, type and shape and names
// the first problem.
//
// Thread-safety: immutable after Load(); share one Model between threads and Forward objects.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "gguf/gguf_reader.h"
#include "kernels/matmul.h"
#include "model/model_config.h"
#include "tokenizer/tokenizer.h"

namespace smartgen::model {

struct LayerWeights {
  std::vector<float> attn_norm;  // [n_embd]
  kernels::WeightView wq, wk, wv, wo;
  std::vector<float> bq, bk, bv;         // qwen2 only: [q_dim], [kv_dim], [kv_dim]
  std::vector<float> q_norm, k_norm;     // qwen3 only: [head_dim]
  std::vector<float> ffn_norm;           // [n_embd]
  kernels::WeightView w_gate, w_up, w_down;
  std::vector<float> post_attn_norm, post_ffn_norm;  // gemma only: [n_embd]
};
// phi3's fused attn_qkv and ffn_up are loaded as views of their row ranges (wq, wk, wv and
// w_gate, w_up), so the forward pass is the same for fused and separate weights.

class Model {
 public:
  // `placement`: where the weights live (core::FilePlacement; serving nodes take kHugePages).
  static Result<std::unique_ptr<Model>> Load(const std::string& path,
                                             core::FilePlacement placement = core::FilePlacement::kMapped);

  const ModelConfig& config() const { return config_; }
  const gguf::GgufFile& file() const { return file_; }
  const tokenizer::Tokenizer& tokenizer() const { return *tokenizer_; }

  const kernels::WeightView& token_embd() const { return token_embd_; }
  const std::vector<float>& output_norm() const { return output_norm_; }
  const kernels::WeightView& output() const { return output_; }  // token_embd when tied
  const LayerWeights& layer(int i) const { return layers_[i]; }

  // The storage type of most matrix weights (for reports), e.g. "f16".
  std::string weight_type_name() const;
  // Bytes of all tensors (what a decode step streams, roughly).
  std::size_t weight_bytes() const;
  // A stable fingerprint of the model (hash of metadata and tensor layout), used in the
  // transfer handshake so two nodes refuse to exchange KV of different models.
  std::uint64_t fingerprint() const { return fingerprint_; }
  // Bytes of Q5_0 and Q8_0 matrices regrouped at load for the VNNI GEMV (kernels/q5_0_groups.h,
  // kernels/q8_0_groups.h): all of them when kernels::Q5_0GroupsPay() (Q8_0GroupsPay()) and the
  // weights are a private copy (kHugePages), except an untied token_embd (read row by row as f32;
  // a tied one is the output head and is regrouped with it); else 0. The file's bytes are then no
  // longer as on disk.
  std::size_t grouped_bytes() const { return grouped_bytes_; }

 private:
  explicit Model(gguf::GgufFile file) : file_(std::move(file)) {}
  Status Init();
  void GroupWeights();

  gguf::GgufFile file_;
  ModelConfig config_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  kernels::WeightView token_embd_;
  std::vector<float> output_norm_;
  kernels::WeightView output_;
  std::vector<LayerWeights> layers_;
  std::uint64_t fingerprint_ = 0;
  std::size_t grouped_bytes_ = 0;
};

}  // namespace smartgen::model
