#include "model/model.h"

#include <map>

#include "kernels/q5_0_groups.h"
#include "kernels/q8_0_groups.h"
#include "kernels/quant.h"

namespace smartgen::model {
namespace {

std::uint64_t Fnv1a(std::uint64_t h, const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

// Rows [first, first + n) of w, as a view.
kernels::WeightView RowRange(const kernels::WeightView& w, std::int64_t first, std::int64_t n) {
  return kernels::WeightView{w.type, w.row(first), n, w.cols, w.layout};
}

class TensorLoader {
 public:
  explicit TensorLoader(const gguf::GgufFile& file) : file_(file) {}

  // A matrix [rows][cols] (ggml ne = [cols, rows]) of a supported weight type.
  Result<kernels::WeightView> Matrix(const std::string& name, std::int64_t rows,
                                     std::int64_t cols) const {
    const gguf::TensorInfo* t = file_.FindTensor(name);
    if (t == nullptr) return NotFound("tensor '{}' is missing", name);
    if (t->ne.size() != 2 || t->ne[0] != cols || t->ne[1] != rows) {
      return InvalidArgument("tensor '{}' has shape [{}], expected [{}, {}]", name,
                             fmt::join(t->ne, ", "), cols, rows);
    }
    if (!gguf::IsSupportedWeightType(t->type)) {
      return Unimplemented("tensor '{}' has type {}, which smartgen cannot compute with yet",
                           name, gguf::GetTypeInfo(t->type).name);
    }
    return kernels::WeightView{t->type, t->data.data(), rows, cols};
  }

  // A vector of n values, converted to f32.
  Result<std::vector<float>> Vector(const std::string& name, std::int64_t n) const {
    const gguf::TensorInfo* t = file_.FindTensor(name);
    if (t == nullptr) return NotFound("tensor '{}' is missing", name);
    if (t->n_elements() != n || t->ne[0] != n) {
      return InvalidArgument("tensor '{}' has shape [{}], expected [{}]", name,
                             fmt::join(t->ne, ", "), n);
    }
    std::vector<float> out(static_cast<std::size_t>(n));
    if (!kernels::DequantizeRow(t->type, t->data.data(), out.data(), n)) {
      return Unimplemented("tensor '{}' has type {}, which cannot be read as f32", name,
                           gguf::GetTypeInfo(t->type).name);
    }
    return out;
  }

 private:
  const gguf::GgufFile& file_;
};

}  // namespace

Result<std::unique_ptr<Model>> Model::Load(const std::string& path, core::FilePlacement placement) {
  SG_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::Open(path, {}, placement));
  std::unique_ptr<Model> model(new Model(std::move(file)));
  SG_RETURN_IF_ERROR(model->Init().WithContext(fmt::format("model '{}'", path)));
  return model;
}

Status Model::Init() {
  SG_ASSIGN_OR_RETURN(config_, ReadModelConfig(file_));
  const ModelConfig& c = config_;
  SG_ASSIGN_OR_RETURN(tokenizer_, tokenizer::Tokenizer::FromGguf(file_));
  if (tokenizer_->n_vocab() > c.n_vocab) {
    return InvalidArgument("tokenizer has {} tokens but token_embd only {} rows",
                           tokenizer_->n_vocab(), c.n_vocab);
  }

  const TensorLoader load(file_);
  SG_ASSIGN_OR_RETURN(token_embd_, load.Matrix("token_embd.weight", c.n_vocab, c.n_embd));
  SG_ASSIGN_OR_RETURN(output_norm_, load.Vector("output_norm.weight", c.n_embd));
  if (c.tied_output) {
    output_ = token_embd_;
  } else {
    SG_ASSIGN_OR_RETURN(output_, load.Matrix("output.weight", c.n_vocab, c.n_embd));
  }
  layers_.resize(c.n_layers);
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    LayerWeights& l = layers_[i];
    SG_ASSIGN_OR_RETURN(l.attn_norm, load.Vector(p + "attn_norm.weight", c.n_embd));
    if (c.fused_qkv) {
      SG_ASSIGN_OR_RETURN(const kernels::WeightView qkv,
                          load.Matrix(p + "attn_qkv.weight", c.q_dim() + 2 * c.kv_dim(), c.n_embd));
      l.wq = RowRange(qkv, 0, c.q_dim());
      l.wk = RowRange(qkv, c.q_dim(), c.kv_dim());
      l.wv = RowRange(qkv, c.q_dim() + c.kv_dim(), c.kv_dim());
    } else {
      SG_ASSIGN_OR_RETURN(l.wq, load.Matrix(p + "attn_q.weight", c.q_dim(), c.n_embd));
      SG_ASSIGN_OR_RETURN(l.wk, load.Matrix(p + "attn_k.weight", c.kv_dim(), c.n_embd));
      SG_ASSIGN_OR_RETURN(l.wv, load.Matrix(p + "attn_v.weight", c.kv_dim(), c.n_embd));
    }
    SG_ASSIGN_OR_RETURN(l.wo, load.Matrix(p + "attn_output.weight", c.n_embd, c.q_dim()));
    if (c.has_qkv_bias) {
      SG_ASSIGN_OR_RETURN(l.bq, load.Vector(p + "attn_q.bias", c.q_dim()));
      SG_ASSIGN_OR_RETURN(l.bk, load.Vector(p + "attn_k.bias", c.kv_dim()));
      SG_ASSIGN_OR_RETURN(l.bv, load.Vector(p + "attn_v.bias", c.kv_dim()));
    }
    if (c.has_qk_norm) {
      SG_ASSIGN_OR_RETURN(l.q_norm, load.Vector(p + "attn_q_norm.weight", c.head_dim));
      SG_ASSIGN_OR_RETURN(l.k_norm, load.Vector(p + "attn_k_norm.weight", c.head_dim));
    }
    if (c.post_norms) {
      SG_ASSIGN_OR_RETURN(l.post_attn_norm, load.Vector(p + "post_attention_norm.weight", c.n_embd));
      SG_ASSIGN_OR_RETURN(l.post_ffn_norm, load.Vector(p + "post_ffw_norm.weight", c.n_embd));
    }
    SG_ASSIGN_OR_RETURN(l.ffn_norm, load.Vector(p + "ffn_norm.weight", c.n_embd));
    if (c.fused_gate_up) {
      SG_ASSIGN_OR_RETURN(const kernels::WeightView gate_up,
                          load.Matrix(p + "ffn_up.weight", 2 * c.n_ff, c.n_embd));
      l.w_gate = RowRange(gate_up, 0, c.n_ff);
      l.w_up = RowRange(gate_up, c.n_ff, c.n_ff);
    } else {
      SG_ASSIGN_OR_RETURN(l.w_gate, load.Matrix(p + "ffn_gate.weight", c.n_ff, c.n_embd));
      SG_ASSIGN_OR_RETURN(l.w_up, load.Matrix(p + "ffn_up.weight", c.n_ff, c.n_embd));
    }
    SG_ASSIGN_OR_RETURN(l.w_down, load.Matrix(p + "ffn_down.weight", c.n_embd, c.n_ff));
  }

  std::uint64_t h = 1469598103934665603ull;
  for (const auto& [key, value] : file_.metadata()) {
    h = Fnv1a(h, key.data(), key.size());
    const std::string v = value.ToString();
    h = Fnv1a(h, v.data(), v.size());
  }
  for (const gguf::TensorInfo& t : file_.tensors()) {
    h = Fnv1a(h, t.name.data(), t.name.size());
    h = Fnv1a(h, t.ne.data(), t.ne.size() * sizeof(std::int64_t));
    h = Fnv1a(h, &t.type, sizeof(t.type));
    h = Fnv1a(h, t.data.data(), std::min<std::size_t>(t.data.size(), 256));
  }
  fingerprint_ = h;  // of the bytes as in the file: taken before they are regrouped
  GroupWeights();
  return Status::Ok();
}

void Model::GroupWeights() {
  const bool q5_0 = kernels::Q5_0GroupsPay(), q8_0 = kernels::Q8_0GroupsPay();
  if (!q5_0 && !q8_0) return;
  auto group = [&](kernels::WeightView* w) {
    if (w->layout != kernels::WeightLayout::kFile) return;
    const bool is_q5_0 = q5_0 && w->type == gguf::GgmlType::kQ5_0;
    const bool is_q8_0 = q8_0 && w->type == gguf::GgmlType::kQ8_0;
    if (!is_q5_0 && !is_q8_0) return;
    std::byte* at = file_.PrivateAddress(w->data);
    if (at == nullptr) return;  // a shared mapping: read as in the file
    if (is_q5_0) kernels::GroupQ5_0Rows(at, w->rows, w->cols);
    if (is_q8_0) kernels::GroupQ8_0Rows(at, w->rows, w->cols);
    w->layout = is_q5_0 ? kernels::WeightLayout::kQ5_0Groups : kernels::WeightLayout::kQ8_0Groups;
    grouped_bytes_ += static_cast<std::size_t>(w->rows) * w->row_bytes();
  };
  for (LayerWeights& l : layers_) {
    for (kernels::WeightView* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) group(w);
  }
  // A tied output head is token_embd: regrouped once, and the embedding lookup reads the layout
  // (kernels::DequantizeViewRow).
  group(&output_);
  if (config_.tied_output) token_embd_.layout = output_.layout;
}

std::string Model::weight_type_name() const {
  std::map<gguf::GgmlType, std::size_t> bytes;
  for (const gguf::TensorInfo& t : file_.tensors()) {
    if (t.ne.size() >= 2) bytes[t.type] += t.data.size();
  }
  gguf::GgmlType best = gguf::GgmlType::kF32;
  std::size_t most = 0;
  for (const auto& [type, n] : bytes) {
    if (n > most) most = n, best = type;
  }
  return std::string(gguf::GetTypeInfo(best).name);
}

std::size_t Model::weight_bytes() const {
  std::size_t n = 0;
  for (const gguf::TensorInfo& t : file_.tensors()) n += t.data.size();
  return n;
}

}  // namespace smartgen::model
