#include "sim/cost_model.h"

#include <algorithm>

namespace smartgen::sim {

Seconds CostModel::Roofline(double flops, double bytes) const {
  return std::max(flops / hw_.prefill_flops(), bytes / hw_.decode_bytes_per_s()) +
         hw_.layer_overhead_s;
}

double CostModel::PrefillLayerFlops(int layer, std::int64_t n) const {
  // Attention's FLOPs counted at the GEMMs' rate: the time they take at their own.
  return shape_.LayerLinearFlopsPerToken() * static_cast<double>(n) +
         shape_.LayerPrefillAttentionFlops(layer, n) * hw_.prefill_flops() / hw_.prefill_attention_flops();
}

Seconds CostModel::PrefillLayer(int layer, std::int64_t n) const {
  const double bytes = shape_.LayerWeightBytes() + shape_.LayerKvBytes(layer, n);
  return Roofline(PrefillLayerFlops(layer, n), bytes);
}

Seconds CostModel::PrefillLayerKvReady(int layer, std::int64_t n) const {
  const double tokens = static_cast<double>(n);
  const double qkv = 2.0 * tokens * shape_.n_embd * (shape_.q_dim() + 2.0 * shape_.kv_dim());
  const double all = PrefillLayerFlops(layer, n);
  return all > 0 ? PrefillLayer(layer, n) * qkv / all : 0.0;
}

Seconds CostModel::PrefillOutput() const {
  return Roofline(shape_.OutputFlopsPerToken(), shape_.OutputWeightBytes());
}

Seconds CostModel::Prefill(std::int64_t n) const {
  Seconds t = PrefillOutput();
  for (int l = 0; l < shape_.n_layers; ++l) t += PrefillLayer(l, n);
  return t;
}

Seconds CostModel::DecodeLayer(int batch, double attended_tokens) const {
  const double kv_bytes = shape_.KvBytesPerTokenLayer() * attended_tokens;
  if (hw_.attention_bytes_per_s > 0) {  // the weight products, then attention as its own phase
    return Roofline(shape_.LayerLinearFlopsPerToken() * batch, shape_.LayerWeightBytes()) +
           DecodeAttention(attended_tokens);
  }
  const double flops = shape_.LayerLinearFlopsPerToken() * batch +
                       4.0 * shape_.q_dim() * attended_tokens;
  return Roofline(flops, shape_.LayerWeightBytes() + kv_bytes);
}

Seconds CostModel::DecodeAttention(double attended_tokens) const {
  const double kv_bytes = shape_.KvBytesPerTokenLayer() * attended_tokens;
  if (hw_.attention_bytes_per_s > 0) return kv_bytes / hw_.attention_bytes_per_s;
  return kv_bytes / hw_.decode_bytes_per_s();
}

CostModel::LayerPhases CostModel::DecodeLayerPhases(int batch, double attended_tokens) const {
  const Seconds linear = DecodeLayer(batch, 0);
  const double params = shape_.LayerParams();
  const double qkv_params = static_cast<double>(shape_.n_embd) * (shape_.q_dim() + 2.0 * shape_.kv_dim());
  LayerPhases p;
  p.qkv = params > 0 ? linear * qkv_params / params : 0.0;
  p.attention = std::max(0.0, DecodeLayer(batch, attended_tokens) - linear);
  p.rest = linear - p.qkv;
  return p;
}

Seconds CostModel::LocalAttention(double attended_tokens) const {
  if (hw_.local_attention_bytes_per_s <= 0) return 0;
  return hw_.local_attention_layer_s +
         shape_.KvBytesPerTokenLayer() * attended_tokens / hw_.local_attention_bytes_per_s;
}

Seconds CostModel::DecodeOutput(int batch) const {
  return Roofline(shape_.OutputFlopsPerToken() * batch, shape_.OutputWeightBytes());
}

Seconds CostModel::DecodeStep(int batch, std::int64_t context) const {
  Seconds t = DecodeOutput(batch);
  for (int l = 0; l < shape_.n_layers; ++l) {
    t += DecodeLayer(batch, static_cast<double>(batch) * shape_.LayerKvTokens(l, context));
  }
  return t;
}

Seconds CostModel::SelectCost(std::int64_t n_blocks) const {
  // Per KV head and block: the group's query heads x 2 x head_dim multiply-adds.
  const double flops = 4.0 * shape_.n_heads * shape_.head_dim * static_cast<double>(n_blocks);
  const double bytes = 2.0 * shape_.n_kv_heads * shape_.head_dim * static_cast<double>(n_blocks);
  const double rate = hw_.select_flops > 0 ? hw_.select_flops : hw_.prefill_flops();
  return std::max(flops / rate, bytes / hw_.decode_bytes_per_s());
}

Seconds CostModel::FirstTouch(double kv_bytes) const {
  return hw_.first_touch_bytes_per_s > 0 ? kv_bytes / hw_.first_touch_bytes_per_s : 0;
}

Seconds CostModel::ColdStep() const {
  return hw_.cold_read_bytes_per_s > 0 ? shape_.WeightBytes() / hw_.cold_read_bytes_per_s : 0;
}

Seconds CostModel::FirstStepOnPrefill(std::int64_t n_prompt, double kv_bytes) const {
  return FirstTouch(kv_bytes) + DecodeStep(1, n_prompt);
}

}  // namespace smartgen::sim
