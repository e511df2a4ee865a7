#include "node/prefill/smartgen_prefill.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "node/common/control_messages.h"
#include "select/path_sizing.h"

namespace smartgen::node {

SmartgenPrefill::SmartgenPrefill(std::uint64_t request_id, const model::ModelConfig& config,
                                 const kv::KvGeometry& geometry, std::int64_t n_prompt,
                                 const select::SmartgenOptions& options, const select::Profile* profile,
                                 std::int64_t budget_bytes, const select::NeededBlocks& needed,
                                 core::ThreadPool* pool)
    : request_id_(request_id),
      config_(config),
      n_prompt_(n_prompt),
      options_(options),
      profile_(profile),
      pool_(pool),
      budget_(select::PlanProactiveBudget(geometry, n_prompt, budget_bytes, profile,
                                          options.proactive, &needed)),
      plans_(config.n_layers),
      pushed_(budget_.grid) {}

void SmartgenPrefill::OnLayerQuery(int, const float* q, std::int64_t n_rows) {
  const std::int64_t rows = std::min<std::int64_t>(options_.query_window, n_rows);
  last_q_rows_ = rows;
  last_q_.assign(q + (n_rows - rows) * config_.q_dim(), q + n_rows * config_.q_dim());
}

SmartgenPrefill::LayerOutput SmartgenPrefill::OnLayerDone(int layer, const kv::SequenceKv& kv) {
  LayerOutput out;
  // A window layer's blocks are all pushed: nothing to select, so no summaries and no scores.
  const bool window = budget_.needed.IsWindowLayer(layer);
  if (!window) {
    const select::LayerSummaries summaries = select::LayerSummaries::Build(kv, layer, n_prompt_);
    const std::vector<std::byte> wire = summaries.Serialize();
    out.summaries = EncodeControl(ControlMessage::Summaries(request_id_, wire));
    summary_bytes_ += static_cast<std::int64_t>(out.summaries.size());
  }

  std::vector<float> scores;
  if (last_q_rows_ > 0 && !window) {
    select::RequestScores(config_, kv, layer, n_prompt_, last_q_.data(), last_q_rows_, &scores, pool_);
  }
  plans_[layer] = select::PlanLayer(budget_, layer, scores, profile_, options_.proactive);
  std::vector<kv::BlockKey> keys;
  keys.reserve(plans_[layer].push.size());
  for (const select::PushItem& item : plans_[layer].push) {
    if (pushed_.Insert(item.key)) keys.push_back(item.key);
  }
  pushed_order_.insert(pushed_order_.end(), keys.begin(), keys.end());
  pushed_blocks_ += static_cast<std::int64_t>(keys.size());
  out.manifest = EncodeControl(ControlMessage::Manifest(request_id_, layer, keys));
  out.push = transfer::RangesOf(request_id_, keys);
  return out;
}

void SmartgenPrefill::ScoreFirstStep(int layer, const float* q, const kv::SequenceKv& kv) {
  // One query row: the softmax runs over the whole prompt (a row at n_prompt - 1 sees it all;
  // RoPE is already in q and k, so the row's nominal position changes nothing else).
  if (budget_.needed.IsWindowLayer(layer)) return;  // its window is pushed whole
  std::vector<float> scores;
  select::RequestScores(config_, kv, layer, n_prompt_, q, 1, &scores, pool_);
  const auto n_blocks = static_cast<std::int32_t>(budget_.grid.n_blocks);
  const std::int32_t k = select::FirstStepBlocksPerHead(options_, n_blocks);
  std::vector<std::int32_t> order(n_blocks);
  for (int h = 0; h < config_.n_kv_heads; ++h) {
    for (std::int32_t b = 0; b < n_blocks; ++b) order[b] = b;
    const float* row = scores.data() + static_cast<std::size_t>(h) * n_blocks;
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](std::int32_t a, std::int32_t b) { return row[a] > row[b]; });
    for (std::int32_t r = 0; r < k; ++r) {
      const kv::BlockKey key{layer, h, order[r]};
      if (!pushed_.Contains(key)) first_candidates_.push_back({r, key});
    }
  }
}

std::vector<kv::BlockKey> SmartgenPrefill::TakeFirstStep(std::int64_t max_blocks) {
  // Rank r of every (layer, head) before rank r + 1 of any, so what lands first serves every
  // head. (Ordering by mass across heads instead starves the heads whose attention is spread -
  // on kv-retrieval-tiny the retrieval heads: 66 % accuracy against 95 % this way.)
  std::stable_sort(first_candidates_.begin(), first_candidates_.end(),
                   [](const FirstCandidate& a, const FirstCandidate& b) { return a.rank < b.rank; });
  std::vector<kv::BlockKey> keys;
  for (const FirstCandidate& c : first_candidates_) {
    if (std::ssize(keys) >= max_blocks) break;
    if (pushed_.Insert(c.key)) keys.push_back(c.key);
  }
  first_candidates_.clear();
  first_step_blocks_ += static_cast<std::int64_t>(keys.size());
  pushed_order_.insert(pushed_order_.end(), keys.begin(), keys.end());
  return keys;
}

select::SpeculativeStream SmartgenPrefill::TakeSpeculative() {
  std::vector<kv::BlockKey> order = select::SpeculativeOrder(plans_);
  if (options_.int8_wire) {
    // The int8 copies are the blocks that matter most: make them exact first. The first-step
    // blocks are also in the plans' rest; the stream sends a block once (its skip set).
    order.insert(order.begin(), pushed_order_.begin(), pushed_order_.end());
  }
  return select::SpeculativeStream(std::move(order));
}

kv::BlockSet SmartgenPrefill::SpeculativeSkip() const {
  return options_.int8_wire ? kv::BlockSet(pushed_.grid()) : pushed_;
}

nlohmann::json SmartgenPrefill::Stats() const {
  return {{"proactive_budget_bytes", budget_.budget_bytes},
          {"proactive_blocks", pushed_blocks_},
          {"proactive_bytes", pushed_blocks_ * static_cast<std::int64_t>(budget_.block_bytes)},
          {"summary_bytes", summary_bytes_},
          {"first_step_blocks", first_step_blocks_},
          {"total_blocks", budget_.grid.total()},
          {"needed_blocks", budget_.needed.Total()},
          {"policy", budget_.note}};
}

}  // namespace smartgen::node
