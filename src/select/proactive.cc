#include "select/proactive.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "select/attention_mass.h"
#include "select/block_summary.h"
#include "select/selective_attention.h"

namespace smartgen::select {
namespace {

// Sinks then last blocks of one (layer, head): [0, sinks) and [last_begin, n_blocks).
struct Edges {
  std::int32_t sinks, last_begin;
  std::int32_t count(std::int32_t n_blocks) const { return sinks + (n_blocks - last_begin); }
  bool contains(std::int32_t b) const { return b < sinks || b >= last_begin; }
};
Edges EdgesOf(std::int32_t n_blocks, const ProactiveOptions& o) {
  const std::int32_t sinks = std::clamp(o.sink_blocks, 0, n_blocks);
  return {sinks, std::max(sinks, n_blocks - std::max(o.last_blocks, 0))};
}

std::int64_t SummaryMessageBytes(int n_heads, int head_dim, std::int32_t n_blocks) {
  return static_cast<std::int64_t>(kSummaryHeaderBytes) + 4LL * n_heads * head_dim +
         2LL * n_heads * head_dim * n_blocks + 8;
}

}  // namespace

ProactiveBudget PlanProactiveBudget(const kv::KvGeometry& geometry, std::int64_t n_prompt_tokens,
                                    std::int64_t budget_bytes, const Profile* profile,
                                    const ProactiveOptions& options, const NeededBlocks* needed) {
  ProactiveBudget b;
  const int n_layers = geometry.n_layers, n_heads = geometry.n_kv_heads;
  b.grid = {n_layers, n_heads, static_cast<std::int32_t>(geometry.BlocksFor(n_prompt_tokens))};
  b.needed = needed != nullptr ? *needed : NeededBlocks::Every(b.grid);
  const std::int32_t nb = b.grid.n_blocks;
  b.block_bytes = geometry.block_bytes();
  b.budget_bytes = budget_bytes;
  b.dense.assign(n_layers, 0);
  b.note = profile != nullptr ? fmt::format("profile {} [{}, {}] tokens", profile->model_name,
                                            profile->min_prompt_tokens, profile->max_prompt_tokens)
                              : kNoProfileNote;

  const std::int64_t per_layer = b.grid.per_layer();
  const std::int64_t edges = std::int64_t{n_heads} * EdgesOf(nb, options).count(nb);
  // Window layers: their needed blocks, no summaries; the others: summaries, sinks, last blocks.
  b.layer_blocks.assign(n_layers, edges);
  std::int64_t first_blocks = 0;
  int n_window = 0;
  for (int l = 0; l < n_layers; ++l) {
    if (b.needed.IsWindowLayer(l)) {
      b.layer_blocks[l] = b.needed.InLayer(l);
      ++n_window;
    } else {
      b.summary_bytes += SummaryMessageBytes(n_heads, geometry.head_dim, nb);
    }
    first_blocks += b.layer_blocks[l];
  }
  if (n_window > 0) b.note += fmt::format("; {} sliding-window layers send their window", n_window);
  const std::int64_t bb = static_cast<std::int64_t>(b.block_bytes);
  std::int64_t left = budget_bytes - b.summary_bytes - first_blocks * bb;
  if (left < 0) {
    b.note += n_window > 0 ? "; budget below summaries + windows + sink/last blocks: pushing those anyway"
                           : "; budget below summaries + sink/last blocks: pushing those anyway";
    left = 0;
  }
  if (profile != nullptr && options.use_dense_layers) {
    for (int l : profile->dense_layers) {
      if (l >= n_layers || b.needed.IsWindowLayer(l)) continue;
      const std::int64_t cost = (per_layer - edges) * bb;
      if (cost <= left) {
        b.dense[l] = 1;
        b.layer_blocks[l] = per_layer;
        left -= cost;
      } else {
        b.note += fmt::format("; dense layer {} does not fit the budget", l);
      }
    }
  }
  // Equal shares for the other layers; a layer that fills up passes its excess on.
  std::int64_t blocks_left = left / bb;
  std::vector<int> open;
  for (int l = 0; l < n_layers; ++l) {
    if (!b.dense[l] && !b.needed.IsWindowLayer(l) && b.layer_blocks[l] < per_layer) open.push_back(l);
  }
  while (blocks_left > 0 && !open.empty()) {
    const std::int64_t share = std::max<std::int64_t>(1, blocks_left / std::ssize(open));
    std::vector<int> still_open;
    for (int l : open) {
      const std::int64_t take = std::min({share, per_layer - b.layer_blocks[l], blocks_left});
      b.layer_blocks[l] += take;
      blocks_left -= take;
      if (b.layer_blocks[l] < per_layer) still_open.push_back(l);
    }
    open.swap(still_open);
  }
  b.planned_bytes = b.summary_bytes;
  for (std::int64_t n : b.layer_blocks) b.planned_bytes += n * bb;
  return b;
}

void RequestScores(const model::ModelConfig& config, const kv::SequenceKv& kv, int layer,
                   std::int64_t n_prompt_tokens, const float* q_rows, std::int64_t n_rows,
                   std::vector<float>* scores, core::ThreadPool* pool) {
  const kv::KvGeometry& g = kv.geometry();
  const std::int32_t nb = static_cast<std::int32_t>(g.BlocksFor(n_prompt_tokens));
  scores->assign(std::size_t(config.n_kv_heads) * nb, 0.0f);
  std::vector<std::int32_t> all(nb);
  std::iota(all.begin(), all.end(), 0);
  const kernels::AttentionParams p = config.LayerAttention(layer, g.dtype);
  auto heads = [&](std::int64_t begin, std::int64_t end) {
    std::vector<kernels::KvBlockRef> refs;
    for (std::int64_t h = begin; h < end; ++h) {
      refs.clear();
      SelectedRefs(kv, layer, static_cast<int>(h), n_prompt_tokens, all, n_prompt_tokens - 1,
                   &refs);
      BlockAttentionMass(p, q_rows + std::size_t(h) * config.n_group() * config.head_dim,
                         config.q_dim(), n_rows, n_prompt_tokens - n_rows, refs,
                         scores->data() + std::size_t(h) * nb);
    }
  };
  if (pool != nullptr) {
    pool->ParallelFor(config.n_kv_heads, heads);
  } else {
    heads(0, config.n_kv_heads);
  }
}

LayerPushPlan PlanLayer(const ProactiveBudget& budget, int layer,
                        std::span<const float> request_scores, const Profile* profile,
                        const ProactiveOptions& options) {
  LayerPushPlan plan;
  plan.layer = layer;
  const int n_heads = budget.grid.n_kv_heads;
  const std::int32_t nb = budget.grid.n_blocks;
  if (budget.needed.IsWindowLayer(layer)) {
    // The window, most recent block first, every head: required, never ranked.
    for (std::int32_t b = nb - 1; b >= budget.needed.FirstBlock(layer); --b) {
      for (int h = 0; h < n_heads; ++h) plan.push.push_back({{layer, h, b}, 0, 0.0f});
    }
    return plan;
  }
  const Edges e = EdgesOf(nb, options);
  // Round 0: sinks of every head, then last blocks of every head.
  for (int h = 0; h < n_heads; ++h) {
    for (std::int32_t b = 0; b < e.sinks; ++b) plan.push.push_back({{layer, h, b}, 0, 0.0f});
  }
  for (int h = 0; h < n_heads; ++h) {
    for (std::int32_t b = nb - 1; b >= e.last_begin; --b)
      plan.push.push_back({{layer, h, b}, 0, 0.0f});
  }
  if (budget.dense[layer]) {
    for (int h = 0; h < n_heads; ++h) {
      for (std::int32_t b = e.sinks; b < e.last_begin; ++b)
        plan.push.push_back({{layer, h, b}, 0, 0.0f});
    }
    return plan;
  }
  // The other blocks by prior x request score; ties (and no information) favour later blocks.
  struct Candidate {
    float score;
    std::int32_t head, block;
  };
  std::vector<Candidate> cand;
  cand.reserve(std::size_t(n_heads) * nb);
  const bool have_scores = request_scores.size() == std::size_t(n_heads) * nb;
  for (int h = 0; h < n_heads; ++h) {
    for (std::int32_t b = e.sinks; b < e.last_begin; ++b) {
      float prior = 1.0f;
      if (profile != nullptr) {
        prior =
            options.prior_floor + (1.0f - options.prior_floor) * profile->Prior(layer, h, b, nb);
      }
      const float req = have_scores ? request_scores[std::size_t(h) * nb + b] : 1.0f;
      cand.push_back({prior * req, h, b});
    }
  }
  std::stable_sort(cand.begin(), cand.end(), [](const Candidate& a, const Candidate& b) {
    return a.score > b.score || (a.score == b.score && a.block > b.block);
  });
  const std::int64_t n_push = std::clamp<std::int64_t>(
      budget.layer_blocks[layer] - std::int64_t{n_heads} * e.count(nb), 0, std::ssize(cand));
  for (std::int64_t i = 0; i < std::ssize(cand); ++i) {
    const kv::BlockKey key{layer, cand[i].head, cand[i].block};
    if (i < n_push) {
      plan.push.push_back({key, static_cast<std::int32_t>(1 + i / n_heads), cand[i].score});
    } else {
      plan.rest.push_back(key);
    }
  }
  return plan;
}

void ProactiveQueue::Add(const LayerPushPlan& plan) {
  Pending& p = layers_[plan.layer];
  size_ += std::ssize(plan.push) - static_cast<std::int64_t>(p.items.size() - p.next);
  p.items = plan.push;
  p.next = 0;
}

std::optional<PushItem> ProactiveQueue::Pop() {
  Pending* best = nullptr;
  for (Pending& p : layers_) {
    if (p.next == p.items.size()) continue;
    if (best == nullptr || p.items[p.next].round < best->items[best->next].round) best = &p;
  }
  if (best == nullptr) return std::nullopt;
  --size_;
  return best->items[best->next++];
}

std::vector<PushItem> MergeBreadthFirst(std::span<const LayerPushPlan> plans) {
  int n_layers = 0;
  for (const LayerPushPlan& p : plans) n_layers = std::max(n_layers, p.layer + 1);
  ProactiveQueue q(n_layers);
  for (const LayerPushPlan& p : plans) q.Add(p);
  std::vector<PushItem> out;
  while (auto item = q.Pop()) out.push_back(*item);
  return out;
}

}  // namespace smartgen::select
