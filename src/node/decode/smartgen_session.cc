#include "node/decode/smartgen_session.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/attention.h"
#include "kernels/lse_merge.h"
#include "node/common/node_config.h"
#include "select/path_sizing.h"
#include "select/selective_attention.h"
#include "transfer/int8_wire.h"

namespace smartgen::node {

SmartgenSession::SmartgenSession(const model::ModelConfig& config, kv::SequenceKv* kv,
                                 kv::Residency* residency, std::int64_t n_prompt,
                                 const select::SmartgenOptions& options,
                                 const select::Profile* profile, const select::NeededBlocks& needed,
                                 FetchFn fetch, RecomputeFn recompute, core::Nanos step_timeout)
    : config_(config),
      kv_(kv),
      residency_(residency),
      n_prompt_(n_prompt),
      options_(options),
      profile_(profile),
      fetch_(std::move(fetch)),
      recompute_(std::move(recompute)),
      step_timeout_(step_timeout),
      needed_(needed),
      selector_(config, static_cast<std::int32_t>(residency->n_blocks()), options.on_demand,
                profile),
      summaries_(config.n_layers),
      manifest_(config.n_layers),
      manifest_seen_(config.n_layers, 0),
      first_step_(config.n_layers),
      first_step_seen_(config.n_layers, 0),
      first_step_used_(config.n_layers, 0),
      incoming_(kv::BlockGrid{config.n_layers, config.n_kv_heads,
                              static_cast<std::int32_t>(residency->n_blocks())}),
      layer_stall_ms_(config.n_layers, 0.0),
      local_ms_(config.n_layers, 0.0),
      ever_selected_(kv::BlockGrid{config.n_layers, config.n_kv_heads,
                                   static_cast<std::int32_t>(residency->n_blocks())}),
      head_refs_(config.n_kv_heads),
      heads_(config.n_kv_heads, config.n_group(), config.head_dim),
      o2_(static_cast<std::size_t>(config.n_group()) * config.head_dim),
      lse2_(config.n_group()),
      head_lse_(static_cast<std::size_t>(config.n_kv_heads) * config.n_group()) {
  if (needed_.grid.n_layers != config.n_layers) {
    needed_ = select::NeededBlocks::Every(
        {config.n_layers, config.n_kv_heads, static_cast<std::int32_t>(residency->n_blocks())});
  }
  selector_.SetNeeded(needed_);
}

Status SmartgenSession::AddSummaries(std::span<const std::byte> wire) {
  SG_ASSIGN_OR_RETURN(select::LayerSummaries s, select::LayerSummaries::Parse(wire));
  if (s.layer() < 0 || s.layer() >= config_.n_layers || s.n_heads() != config_.n_kv_heads ||
      s.head_dim() != config_.head_dim || s.n_blocks() != residency_->n_blocks()) {
    return DataLoss("summaries of layer {} do not match the request's prompt", s.layer());
  }
  std::lock_guard<std::mutex> lock(mu_);
  summary_bytes_ += static_cast<std::int64_t>(wire.size());
  summaries_[s.layer()] = std::make_unique<select::LayerSummaries>(std::move(s));
  return Status::Ok();
}

Status SmartgenSession::AddManifest(int layer, const std::vector<kv::BlockKey>& blocks) {
  if (layer < 0 || layer >= config_.n_layers) return DataLoss("manifest of layer {}", layer);
  for (const auto& k : blocks) {
    if (k.kv_head < 0 || k.kv_head >= config_.n_kv_heads || k.block < 0 ||
        k.block >= residency_->n_blocks()) {
      return DataLoss("manifest block {}/{} is outside the prompt", k.kv_head, k.block);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  manifest_[layer] = blocks;
  manifest_seen_[layer] = 1;
  for (const auto& k : blocks) incoming_.Insert(k);
  proactive_blocks_ += static_cast<std::int64_t>(blocks.size());
  return Status::Ok();
}

Status SmartgenSession::AddFirstStep(int layer, const std::vector<kv::BlockKey>& blocks) {
  if (layer < 0 || layer >= config_.n_layers) return DataLoss("first-step manifest of layer {}", layer);
  for (const auto& k : blocks) {
    if (k.kv_head < 0 || k.kv_head >= config_.n_kv_heads || k.block < 0 ||
        k.block >= residency_->n_blocks()) {
      return DataLoss("first-step block {}/{} is outside the prompt", k.kv_head, k.block);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& k : blocks) incoming_.Insert(k);  // pushed now
  first_step_[layer] = blocks;
  first_step_seen_[layer] = 1;
  first_step_blocks_ += static_cast<std::int64_t>(blocks.size());
  return Status::Ok();
}

void SmartgenSession::OnLinkDown() {
  link_down_.store(true);
  residency_->Wake();
}

bool SmartgenSession::Ready(core::Nanos prefill_done_at) {
  if (staged_) staged_->Apply();
  std::lock_guard<std::mutex> lock(mu_);
  bool all_present = true;
  for (int l = 0; l < config_.n_layers; ++l) {
    if ((!summaries_[l] && !needed_.IsWindowLayer(l)) || !manifest_seen_[l]) return false;
    if (options_.first_step && !first_step_seen_[l]) return false;
    for (const auto& k : manifest_[l]) {
      all_present = all_present && residency_->present(k.layer, k.kv_head, k.block);
    }
  }
  if (!options_.first_step) return all_present;
  // The first step's wait ends first_wait_ms after PrefillDone. A proactive set still on the
  // link then (it was sized from estimates) does not hold token 2 back longer: the step waits
  // for what it selects of the rest until that moment.
  if (first_step_until_ == 0) {
    first_step_until_ = prefill_done_at + static_cast<core::Nanos>(options_.first_wait_ms * core::kNanosPerMilli);
  }
  return all_present || core::NowNanos() >= first_step_until_;
}

void SmartgenSession::CheckExact() {
  if (exact_at_ == 0 && residency_->AllPresent()) {
    exact_at_ = core::NowNanos();
    if (on_exact_) on_exact_();
  }
}

Status SmartgenSession::AttendDense(int layer, const float* q, std::int64_t pos, float* out) {
  const kernels::AttentionParams p = config_.LayerAttention(layer, kv_->geometry().dtype);
  // A window layer's blocks before its window never come (and hold no key it attends).
  const std::size_t skip = static_cast<std::size_t>(residency_->first_needed(layer));
  for (int h = 0; h < config_.n_kv_heads; ++h) {
    std::vector<kernels::KvBlockRef>& refs = head_refs_[h];
    refs.clear();
    kv_->AllRefs(layer, h, &refs);
    refs.erase(refs.begin(),
               refs.begin() + static_cast<std::ptrdiff_t>(std::min(skip, refs.size())));
  }
  heads_.Run(pool_, p, q, pos, head_refs_, out, head_lse_.data());
  return Status::Ok();
}

Status SmartgenSession::RequestKeys(std::span<const kv::BlockKey> keys) {
  scratch_keys_.clear();
  for (const kv::BlockKey& k : keys) {
    if (residency_->MarkRequested(k.layer, k.kv_head, k.block)) scratch_keys_.push_back(k);
  }
  if (scratch_keys_.empty()) return Status::Ok();
  blocks_fetched_ += std::ssize(scratch_keys_);
  step_phases_.requested += std::ssize(scratch_keys_);
  const Status st = fetch_(scratch_keys_);
  if (!st.ok()) {
    for (const auto& k : scratch_keys_) residency_->MarkAbsent(k.layer, k.kv_head, k.block);
  }
  return st;
}

Status SmartgenSession::Request(int layer, const select::LayerSelection& sel,
                                std::vector<kv::BlockKey>* missing) {
  std::vector<kv::BlockKey> keys;
  for (int h = 0; h < static_cast<int>(sel.heads.size()); ++h) {
    for (std::int32_t b : sel.heads[h]) {
      if (residency_->present(layer, h, b)) continue;
      if (missing) missing->push_back({layer, h, b});
      keys.push_back({layer, h, b});
    }
  }
  return RequestKeys(keys);
}

double SmartgenSession::WireBlockBytes() const {
  const kv::KvGeometry& g = kv_->geometry();
  if (!options_.int8_wire) return static_cast<double>(g.block_bytes());
  return static_cast<double>(transfer::Int8BlockBytes(ToTransferGeometry(g)));
}

std::int64_t SmartgenSession::FetchCap() const {
  // link_bytes_per_s_ is measured at the step's start (0 = not yet); a block costs its wire size.
  return select::FetchCapBlocks(options_, link_bytes_per_s_, step_ms_, WireBlockBytes(), config_.n_layers);
}

core::Nanos SmartgenSession::WaitBound(int layer) const {
  const double ms = select::LayerWaitBoundMs(options_, step_compute_ms_, local_ms_[layer], config_.n_layers);
  return static_cast<core::Nanos>(ms * core::kNanosPerMilli);
}

void SmartgenSession::RequestPredicted(int layer) {
  predicted_layer_ = -1;
  // A window layer's blocks are all pushed: nothing to predict there.
  if (!options_.predict_next || layer + 1 >= config_.n_layers || residency_->LayerComplete(layer + 1) ||
      needed_.IsWindowLayer(layer + 1)) {
    return;
  }
  const select::PredictionUse use = select::UsePrediction(static_cast<double>(predicted_),
                                                          static_cast<double>(predicted_hits_));
  if (use == select::PredictionUse::kOff) return;
  select::LayerSelection predicted;
  selector_.PredictNext(layer, &predicted);
  if (use == select::PredictionUse::kCheck) {
    // Scored only: the blocks it would ask for (absent, not on their way).
    predicted_keys_.clear();
    for (int h = 0; h < static_cast<int>(predicted.heads.size()); ++h) {
      for (std::int32_t b : predicted.heads[h]) {
        if (residency_->state(layer + 1, h, b) == kv::BlockState::kAbsent) {
          predicted_keys_.push_back({layer + 1, h, b});
        }
      }
    }
    predicted_layer_ = layer + 1;
    return;
  }
  // Best effort: a failed early request is made again when the layer needs the blocks.
  if (!Request(layer + 1, predicted, nullptr).ok()) return;
  predicted_layer_ = layer + 1;
  predicted_keys_ = scratch_keys_;  // the blocks this prediction actually asked for
  predicted_fetched_ += std::ssize(predicted_keys_);
}

void SmartgenSession::ScorePrediction(int layer, const select::LayerSelection& sel) {
  if (predicted_layer_ != layer) return;
  predicted_layer_ = -1;
  for (const kv::BlockKey& k : predicted_keys_) {
    const auto& chosen = sel.heads[k.kv_head];
    ++predicted_;
    if (std::find(chosen.begin(), chosen.end(), k.block) != chosen.end()) ++predicted_hits_;
  }
}

Status SmartgenSession::Recover(const Status& why) {
  if (!recovered_) {
    recovered_ = true;
    const Status st = recompute_();
    if (!st.ok()) {
      return Unavailable("KV fetch failed ({}) and the local recompute failed too: {}",
                         why.ToString(), st.ToString());
    }
  }
  CheckExact();
  return Status::Ok();
}

bool SmartgenSession::TakeFirstStep(int layer, select::LayerSelection* sel) {
  if (first_step_used_[layer]) return false;
  std::vector<kv::BlockKey> keys;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!first_step_seen_[layer]) return false;
    keys.swap(first_step_[layer]);
  }
  first_step_used_[layer] = 1;
  if (first_step_until_ == 0) {
    first_step_until_ = core::NowNanos() + static_cast<core::Nanos>(options_.first_wait_ms * core::kNanosPerMilli);
  }
  // Ranked first: at the head's top score, in the prefill node's order.
  for (const kv::BlockKey& k : keys) {
    auto& blocks = sel->heads[k.kv_head];
    if (std::find(blocks.begin(), blocks.end(), k.block) != blocks.end()) continue;
    float top = 0;
    if (!sel->scores.empty()) {
      top = -std::numeric_limits<float>::infinity();
      for (float v : sel->scores[k.kv_head]) top = std::max(top, v);
      if (!std::isfinite(top)) top = 0;
      sel->scores[k.kv_head].push_back(top);
    }
    blocks.push_back(k.block);
  }
  return true;
}

Status SmartgenSession::Attend(int layer, const float* q, std::int64_t pos, float* out) {
  if (layer == 0 && staged_) staged_->Apply();  // between steps: nothing reads the KV now
  if (layer == 0) {
    const core::Nanos now = core::NowNanos();
    if (step_start_ != 0) {
      step_ms_ = step_ms_ == 0 ? core::ToMillis(now - step_start_)
                               : 0.8 * step_ms_ + 0.2 * core::ToMillis(now - step_start_);
      // The step's own time, its waits on the link taken out (what the wait bound scales with).
      const double own = std::max(0.0, core::ToMillis(now - step_start_) - step_stall_ms_);
      step_compute_ms_ = step_compute_ms_ == 0 ? own : 0.8 * step_compute_ms_ + 0.2 * own;
      step_phases_.own = own;
      if (phases_per_step_.size() < 64) phases_per_step_.push_back(step_phases_);
    } else {
      first_attend_at_ = now;
    }
    step_phases_ = {};
    step_stall_ms_ = 0;
    step_start_ = now;
    if (link_rate_ && exact_at_ == 0) link_bytes_per_s_ = link_rate_();
  }
  CheckExact();
  if (exact_at_ != 0 || residency_->LayerComplete(layer)) return AttendDense(layer, q, pos, out);
  if (link_down_.load() && options_.fetch_on_demand) {
    SG_RETURN_IF_ERROR(Recover(Unavailable("the KV link is down")));
    return AttendDense(layer, q, pos, out);
  }
  const core::Nanos t_select = core::NowNanos();
  select::LayerSelection sel;
  if (needed_.IsWindowLayer(layer)) {
    selector_.SelectWindow(layer, &sel);
  } else {
    const select::LayerSummaries* summaries;
    {
      std::lock_guard<std::mutex> lock(mu_);
      summaries = summaries_[layer].get();
    }
    if (summaries == nullptr) return Internal("layer {} has no summaries", layer);
    selector_.Select(layer, q, *summaries, &sel);
  }
  ScorePrediction(layer, sel);
  CountFresh(layer, sel);
  const bool first_step = TakeFirstStep(layer, &sel);

  // The selected blocks that are not here, highest score first.
  struct Missing {
    float score;
    kv::BlockKey key;
  };
  std::vector<Missing> missing;
  for (int h = 0; h < config_.n_kv_heads; ++h) {
    for (std::size_t i = 0; i < sel.heads[h].size(); ++i) {
      const std::int32_t b = sel.heads[h][i];
      if (residency_->present(layer, h, b)) continue;
      missing.push_back({sel.scores.empty() ? 0.0f : sel.scores[h][i], {layer, h, b}});
    }
  }
  std::stable_sort(missing.begin(), missing.end(), [](const Missing& a, const Missing& b) { return a.score > b.score; });
  std::vector<kv::BlockKey> awaited;  // missing and on its way (requested now or before)
  if (options_.fetch_on_demand && !missing.empty()) {
    // This layer's blocks first (the link serves one priority in order), as many as can arrive.
    std::vector<kv::BlockKey> ask;
    const std::int64_t cap = FetchCap();
    std::vector<std::uint8_t> coming(missing.size(), 0);  // pushed by the prefill node already
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (std::size_t i = 0; i < missing.size(); ++i) coming[i] = incoming_.Contains(missing[i].key);
    }
    for (std::size_t i = 0; i < missing.size(); ++i) {
      const Missing& m = missing[i];
      if (coming[i] ||
          residency_->state(m.key.layer, m.key.kv_head, m.key.block) == kv::BlockState::kRequested)
        continue;
      if (std::ssize(ask) >= cap) {
        ++fetch_capped_;
        continue;
      }
      ask.push_back(m.key);
    }
    Status st = RequestKeys(ask);
    if (!st.ok()) {
      SG_RETURN_IF_ERROR(Recover(st));
      return AttendDense(layer, q, pos, out);
    }
    for (std::size_t i = 0; i < missing.size(); ++i) {
      const Missing& m = missing[i];
      if (coming[i] ||
          residency_->state(m.key.layer, m.key.kv_head, m.key.block) != kv::BlockState::kAbsent) {
        awaited.push_back(m.key);
      }
    }
  }
  if (options_.fetch_on_demand) RequestPredicted(layer);

  // Attend over what is here (the selected blocks that are present - or, with attend_present,
  // every present block - plus the generated tail) while the missing blocks are in flight.
  const core::Nanos t_local = core::NowNanos();
  select_ms_total_ += core::ToMillis(t_local - t_select);
  step_phases_.select += core::ToMillis(t_local - t_select);
  const int g = config_.n_group(), d = config_.head_dim;
  const kernels::AttentionParams p = config_.LayerAttention(layer, kv_->geometry().dtype);
  std::vector<std::vector<std::int32_t>> absent(config_.n_kv_heads);
  std::vector<std::int32_t> here;
  const auto n_blocks = static_cast<std::int32_t>(residency_->n_blocks());
  for (int h = 0; h < config_.n_kv_heads; ++h) {
    // One look at each block's residency, so a block landing now is in `here` or in
    // `absent` (merged below if it lands in time), never in both.
    here.clear();
    if (options_.attend_present) {  // every present block, in block order
      selected_mask_.assign(static_cast<std::size_t>(n_blocks), 0);
      for (std::int32_t b : sel.heads[h]) selected_mask_[b] = 1;
      for (std::int32_t b = needed_.FirstBlock(layer); b < n_blocks; ++b) {
        if (residency_->present(layer, h, b)) {
          here.push_back(b);
        } else if (selected_mask_[b]) {
          absent[h].push_back(b);
        }
      }
    } else {
      for (std::int32_t b : sel.heads[h]) {
        (residency_->present(layer, h, b) ? here : absent[h]).push_back(b);
      }
    }
    head_refs_[h].clear();
    select::SelectedRefs(*kv_, layer, h, n_prompt_, here, pos, &head_refs_[h]);
    step_phases_.attended += std::ssize(here);
  }
  heads_.Run(pool_, p, q, pos, head_refs_, out, head_lse_.data());
  const double local_ms = core::ToMillis(core::NowNanos() - t_local);
  local_ms_[layer] = local_ms_[layer] == 0 ? local_ms : 0.8 * local_ms_[layer] + 0.2 * local_ms;
  local_ms_total_ += local_ms;
  step_phases_.local += local_ms;
  ++steps_;
  selected_ += sel.total();
  missing_ += std::ssize(missing);
  step_selected_ += sel.total();
  step_missing_ += std::ssize(missing);

  // Wait for the awaited blocks, but only up to the bound: a step never waits on the link
  // longer than that (a bound at or past the step timeout means: wait for all, or recompute).
  bool merged_any = false;
  if (!awaited.empty()) {
    const core::Nanos t0 = core::NowNanos();
    core::Nanos bound = std::min(WaitBound(layer), step_timeout_);
    if (first_step) bound = std::max(bound, std::min(first_step_until_ - t0, step_timeout_ - 1));
    wait_bound_ms_total_ += core::ToMillis(bound);
    ++waited_layer_steps_;
    const auto all_here = [&] {
      for (const auto& k : awaited) {
        if (!residency_->present(k.layer, k.kv_head, k.block)) return false;
      }
      return true;
    };
    // A copy that lands staged (the partial last prompt block, an exact copy over an int8 one)
    // marks its block only when applied: apply it here too, not only between steps, or a step
    // that awaits that block waits out its whole bound (a wait-for-all step: the step timeout,
    // then a needless recompute). Safe mid-step: this is the engine thread, the layer's local
    // attention is done, nothing else reads this request's KV, and Apply copies prompt rows only.
    const core::Deadline until = core::Deadline::After(bound);
    Status waited;
    while (true) {
      const std::int64_t staged_seen = staged_ != nullptr ? staged_->ready_total() : 0;
      if (staged_ != nullptr) staged_->Apply();
      waited = residency_->WaitUntil(
          [&] {
            return link_down_.load() || all_here() ||
                   (staged_ != nullptr && staged_->ready_total() != staged_seen);
          },
          until);
      if (!waited.ok() || link_down_.load() || all_here()) break;
    }
    const double stalled = core::ToMillis(core::NowNanos() - t0);
    layer_stall_ms_[layer] += stalled;
    step_stall_ms_ += stalled;
    bool all = waited.ok();
    for (const auto& k : awaited) all = all && residency_->present(k.layer, k.kv_head, k.block);
    if (link_down_.load() || (!all && bound >= step_timeout_)) {
      SG_RETURN_IF_ERROR(Recover(link_down_.load() ? Unavailable("the KV link went down") : waited));
      return AttendDense(layer, q, pos, out);
    }
    // Merge what landed in time; the rest is left out of this step and used once it is here.
    const core::Nanos t_merge = core::NowNanos();
    for (int h = 0; h < config_.n_kv_heads; ++h) {
      std::vector<std::int32_t>& arrived = absent[h];
      std::erase_if(arrived, [&](std::int32_t b) { return !residency_->present(layer, h, b); });
      if (arrived.empty()) continue;
      merged_any = true;
      refs_.clear();
      select::SelectedRefs(*kv_, layer, h, n_prompt_, arrived, n_prompt_ - 1, &refs_);
      kernels::AttendBlocks(p, q + h * g * d, pos, refs_, o2_.data(), lse2_.data());
      for (int j = 0; j < g; ++j) {
        kernels::LseMergeInto(d, out + (h * g + j) * d, &head_lse_[h * g + j], o2_.data() + j * d,
                              lse2_[j]);
      }
    }
    merge_ms_total_ += core::ToMillis(core::NowNanos() - t_merge);
    step_phases_.merge += core::ToMillis(core::NowNanos() - t_merge);
  }
  (void)merged_any;
  const core::Nanos t_stats = core::NowNanos();
  RecordPresence(layer, sel);
  merge_ms_total_ += core::ToMillis(core::NowNanos() - t_stats);
  step_phases_.merge += core::ToMillis(core::NowNanos() - t_stats);
  return Status::Ok();
}

}  // namespace smartgen::node
