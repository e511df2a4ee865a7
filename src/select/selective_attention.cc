#include "select/selective_attention.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace smartgen::select {

Status AllBlocksChooser::Choose(int, const float*, std::int64_t, LayerSelection* out) {
  out->heads.resize(n_kv_heads_);
  for (auto& h : out->heads) {
    h.resize(n_blocks_);
    std::iota(h.begin(), h.end(), 0);
  }
  return Status::Ok();
}

void SelectedRefs(const kv::SequenceKv& kv, int layer, int head, std::int64_t n_prompt_tokens,
                  const std::vector<std::int32_t>& blocks, std::int64_t end_pos,
                  std::vector<kernels::KvBlockRef>* out) {
  const kv::KvGeometry& g = kv.geometry();
  const std::int64_t bt = g.block_tokens;
  const std::size_t row = g.row_bytes();
  const std::int64_t prompt_end = std::min(n_prompt_tokens, end_pos + 1);
  // A view of positions [begin, end) inside block b.
  auto view = [&](std::int64_t b, std::int64_t begin, std::int64_t end) {
    kernels::KvBlockRef r = kv.Ref(layer, head, b);
    const std::int64_t skip = begin - b * bt;
    r.k = static_cast<const std::byte*>(r.k) + skip * row;
    r.v = static_cast<const std::byte*>(r.v) + skip * row;
    r.first_pos = begin;
    r.n_tokens = static_cast<std::int32_t>(end - begin);
    out->push_back(r);
  };
  for (std::int32_t b : blocks) {
    const std::int64_t begin = std::int64_t{b} * bt;
    const std::int64_t end = std::min(begin + bt, prompt_end);
    if (end > begin) view(b, begin, end);
  }
  for (std::int64_t p = n_prompt_tokens; p <= end_pos;) {
    const std::int64_t b = p / bt;
    const std::int64_t end = std::min((b + 1) * bt, end_pos + 1);
    view(b, p, end);
    p = end;
  }
}

SelectiveAttention::SelectiveAttention(const model::ModelConfig& config, const kv::SequenceKv* kv,
                                       std::int64_t n_prompt_tokens, BlockChooser* chooser)
    : config_(config),
      kv_(kv),
      n_prompt_tokens_(n_prompt_tokens),
      chooser_(chooser),
      last_(config.n_layers),
      lse_(config.n_group()) {}

Status SelectiveAttention::Attend(int layer, const float* q, std::int64_t pos, float* out) {
  LayerSelection& sel = last_[layer];
  SG_RETURN_IF_ERROR(chooser_->Choose(layer, q, pos, &sel));
  if (static_cast<int>(sel.heads.size()) != config_.n_kv_heads) {
    return Internal("block chooser returned {} heads, the model has {}", sel.heads.size(),
                    config_.n_kv_heads);
  }
  const int g = config_.n_group();
  const kernels::AttentionParams p = config_.LayerAttention(layer, kv_->geometry().dtype);
  for (int h = 0; h < config_.n_kv_heads; ++h) {
    refs_.clear();
    SelectedRefs(*kv_, layer, h, n_prompt_tokens_, sel.heads[h], pos, &refs_);
    const std::size_t off = std::size_t(h) * g * config_.head_dim;
    kernels::AttendBlocks(p, q + off, pos, refs_, out + off, lse_.data());
  }
  return Status::Ok();
}

}  // namespace smartgen::select
