#include "select/on_demand.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace smartgen::select {

OnDemandSelector::OnDemandSelector(const model::ModelConfig& config, std::int32_t n_prompt_blocks,
                                   const OnDemandOptions& options, const Profile* profile)
    : n_layers_(config.n_layers),
      n_kv_heads_(config.n_kv_heads),
      n_group_(config.n_group()),
      head_dim_(config.head_dim),
      n_blocks_(n_prompt_blocks),
      options_(options),
      profile_(profile),
      dense_(config.n_layers, 0),
      streaming_(std::size_t(config.n_layers) * config.n_kv_heads, 0),
      window_first_(config.n_layers, -1),
      last_(config.n_layers) {
  budget_ =
      options.budget_blocks > 0
          ? options.budget_blocks
          : std::max<std::int32_t>(
                options.min_budget_blocks,
                static_cast<std::int32_t>(std::ceil(options.budget_fraction * n_prompt_blocks)));
  if (profile_ != nullptr) {
    note_ = "profile " + profile_->model_name + " bucket [" +
            std::to_string(profile_->min_prompt_tokens) + ", " +
            std::to_string(profile_->max_prompt_tokens) + "] tokens";
    for (int l = 0; l < n_layers_; ++l) {
      dense_[l] = options.use_dense_layers && profile_->IsDense(l);
      for (int h = 0; h < n_kv_heads_; ++h) {
        streaming_[std::size_t(l) * n_kv_heads_ + h] =
            options.streaming_threshold > 0 &&
            profile_->layers[l].heads[h].streaming_score >= options.streaming_threshold;
      }
    }
  } else {
    note_ = kNoProfileNote;
  }
  scores_.resize(n_blocks_);
  order_.resize(n_blocks_);
  previous_.resize(n_blocks_);
}

void OnDemandSelector::SetNeeded(const NeededBlocks& needed) {
  for (int l = 0; l < n_layers_; ++l) window_first_[l] = needed.IsWindowLayer(l) ? needed.FirstBlock(l) : -1;
}

void OnDemandSelector::SelectAll(LayerSelection* out) const { SelectFrom(0, out); }

void OnDemandSelector::SelectWindow(int layer, LayerSelection* out) {
  SelectFrom(window_first_[layer], out);
  last_[layer] = *out;
}

void OnDemandSelector::SelectFrom(std::int32_t first, LayerSelection* out) const {
  out->scores.clear();
  out->heads.resize(n_kv_heads_);
  for (auto& h : out->heads) {
    h.resize(static_cast<std::size_t>(std::max(0, n_blocks_ - first)));
    std::iota(h.begin(), h.end(), first);
  }
}

void OnDemandSelector::Select(int layer, const float* q, const LayerSummaries& summaries,
                              LayerSelection* out) {
  if (window_first_[layer] >= 0) return SelectWindow(layer, out);
  const std::int32_t sinks = std::min(options_.sink_blocks, n_blocks_);
  const std::int32_t local_begin = std::max(sinks, n_blocks_ - options_.local_blocks);
  const std::int32_t middle = local_begin - sinks;  // blocks chosen by score
  if (dense_[layer] || middle <= budget_) {
    SelectAll(out);
    last_[layer] = *out;
    return;
  }
  out->heads.resize(n_kv_heads_);
  out->scores.resize(n_kv_heads_);
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim_));
  for (int h = 0; h < n_kv_heads_; ++h) {
    std::vector<std::int32_t>& sel = out->heads[h];
    sel.clear();
    for (std::int32_t b = 0; b < sinks; ++b) sel.push_back(b);
    const bool scored = !streaming_[std::size_t(layer) * n_kv_heads_ + h];
    if (scored) {
      summaries.UpperBounds(h, q + std::size_t(h) * n_group_ * head_dim_, n_group_, scores_.data());
      std::int32_t* first = order_.data();
      std::iota(first, first + middle, sinks);
      // The blocks this head chose at the layer's previous step get the hysteresis margin.
      std::fill(previous_.begin(), previous_.end(), 0);
      const bool had = last_[layer].heads.size() == static_cast<std::size_t>(n_kv_heads_);
      if (had) {
        for (std::int32_t b : last_[layer].heads[h]) previous_[b] = 1;
      }
      const float bonus = options_.hysteresis / scale;  // in unscaled bound units
      auto effective = [&](std::int32_t b) { return scores_[b] + (previous_[b] ? bonus : 0.0f); };
      // Highest score first; ties to the later block (recency).
      auto better = [&](std::int32_t a, std::int32_t b) {
        const float ea = effective(a), eb = effective(b);
        return ea > eb || (ea == eb && a > b);
      };
      std::nth_element(first, first + budget_ - 1, first + middle, better);
      sel.insert(sel.end(), first, first + budget_);
      if (had) {
        scored_ += budget_;
        for (std::int32_t i = 0; i < budget_; ++i) changed_ += previous_[first[i]] ? 0 : 1;
      }
    }
    for (std::int32_t b = local_begin; b < n_blocks_; ++b) sel.push_back(b);
    std::sort(sel.begin(), sel.end());
    std::vector<float>& sc = out->scores[h];
    sc.resize(sel.size());
    for (std::size_t i = 0; i < sel.size(); ++i) sc[i] = scored ? scores_[sel[i]] * scale : 0.0f;
  }
  last_[layer] = *out;
}

void OnDemandSelector::PredictNext(int layer, LayerSelection* out) const {
  if (layer + 1 < n_layers_ && window_first_[layer + 1] >= 0) {
    SelectFrom(window_first_[layer + 1], out);
    return;
  }
  if (layer + 1 < n_layers_ && dense_[layer + 1]) {
    SelectAll(out);
    return;
  }
  *out = last_[layer];
}

}  // namespace smartgen::select
