#include "sim/smartgen_kv.h"

#include <algorithm>

#include "select/on_demand.h"

namespace smartgen::sim {

SmartgenKv::SmartgenKv(const ModelShape& shape, const select::NeededBlocks& needed,
                       const SmartgenSimOptions& options,
                       const std::vector<std::int64_t>& layer_proactive_blocks) {
  n_blocks_ = needed.grid.n_blocks;
  // The node's budget rule, from the node's selector (window layers select their window).
  select::OnDemandSelector selector(shape.AttentionConfig(), n_blocks_, options.on_demand, nullptr);
  selector.SetNeeded(needed);
  budget_ = selector.budget();
  const double heads = shape.n_kv_heads;
  const double edge_per_head =
      std::min<double>(n_blocks_, std::max(0, options.on_demand.sink_blocks) +
                                      std::max(0, options.on_demand.local_blocks));
  index_.assign(shape.n_layers, -1);
  for (int l = 0; l < shape.n_layers; ++l) {
    if (needed.IsWindowLayer(l)) continue;
    index_[l] = static_cast<int>(layers_.size());
    Layer s;
    s.edges = heads * edge_per_head;
    s.never = heads * n_blocks_ - s.edges;
    s.k = std::min(s.never, heads * std::min<double>(budget_, n_blocks_ - edge_per_head));
    const double pushed = static_cast<std::size_t>(l) < layer_proactive_blocks.size()
                              ? static_cast<double>(layer_proactive_blocks[l])
                              : s.edges;
    s.never_present = std::clamp(pushed - s.edges, 0.0, s.never);
    s.p0 = s.never > 0 ? s.never_present / s.never : 1.0;
    layers_.push_back(s);
    total_ += heads * n_blocks_;
  }
}

LayerDemand SmartgenKv::Select(int layer, int step, const SelectionStats& stats) {
  LayerDemand d;
  const int i = index_[layer];
  if (i < 0) return d;
  Layer& s = layers_[i];
  d.selected = s.edges + s.k;
  // Repeats of earlier choices: absent while their fetch is on the wire or still wanted. Step
  // 1 selects k anew, less what the prefill node's first step pre-selected.
  const double fresh = step <= 1 ? std::clamp(s.k - s.selected, 0.0, s.never)
                                 : std::min(s.never, s.k * stats.Churn(step));
  const double repeats = s.k - fresh;
  const double repeat_absent =
      s.selected > 0 ? repeats * (s.wanted + s.requested + s.deferred) / s.selected : 0.0;
  double fresh_absent = 0;
  if (fresh > 0 && s.never > 0) {
    const double p = s.never_present / s.never;
    // Step 1: the lift model on the whole selection, with the proactive share at its start.
    double present = step <= 1 ? std::min(fresh, s.k * stats.FirstStepPresent(s.p0)) : fresh * p;
    // Replayed: the recorded share of the step's selection that was absent.
    if (const double absent = stats.Absent(step); absent >= 0) {
      present = std::max(0.0, fresh - std::max(0.0, d.selected * absent - repeat_absent));
    }
    const double present_taken = std::min(present, s.never_present);
    fresh_absent = fresh - present_taken;
    // Absent fresh blocks come from the speculative batch on the wire in proportion.
    const double absent_pool = s.never - s.never_present;
    const double from_fly = absent_pool > 0 ? fresh_absent * s.never_fly / absent_pool : 0.0;
    s.never_present -= present_taken;
    s.never_fly -= std::min(from_fly, s.never_fly);
    duplicates_ += from_fly;
    s.never -= fresh;
    s.selected += fresh;
    s.wanted += fresh_absent;
  }
  d.absent = fresh_absent + repeat_absent;
  d.to_fetch = s.wanted;
  return d;
}

double SmartgenKv::PlanFirstStep(const SelectionStats& stats, double max_blocks) {
  double candidates = 0;
  for (const Layer& s : layers_) candidates += s.k * (1.0 - stats.FirstStepPresent(s.p0));
  if (candidates <= 0 || max_blocks <= 0) return 0;
  // A replayed count is what the prefill node's own first step found absent and pushed.
  const double want =
      stats.first_step_blocks >= 0 ? std::min(max_blocks, stats.first_step_blocks) : max_blocks;
  const double share =
      stats.first_step_blocks >= 0 ? want / candidates : std::min(1.0, want / candidates);
  double total = 0;
  for (Layer& s : layers_) {
    const double take = std::min(s.never - s.never_present, s.k * (1.0 - stats.FirstStepPresent(s.p0)) * share);
    if (take <= 0) continue;
    s.first = take;
    s.never -= take;
    s.selected += take;
    s.requested += take;
    total += take;
  }
  return total;
}

double SmartgenKv::first_step(int layer) const {
  const int i = index_[layer];
  return i < 0 ? 0.0 : layers_[i].first;
}

double SmartgenKv::present(int layer) const {
  const int i = index_[layer];
  if (i < 0) return 0;
  const Layer& s = layers_[i];
  return s.edges + s.never_present + std::max(0.0, s.selected - s.wanted - s.requested - s.deferred);
}

void SmartgenKv::Requested(int layer, double n) {
  const int i = index_[layer];
  if (i < 0) return;
  Layer& s = layers_[i];
  n = std::clamp(n, 0.0, s.wanted);
  s.wanted -= n;
  s.requested += n;
}

void SmartgenKv::Landed(int layer, double n) {
  const int i = index_[layer];
  if (i < 0) return;
  Layer& s = layers_[i];
  s.requested -= std::min(n, s.requested);
}

void SmartgenKv::Deferred(int layer, double n) {
  const int i = index_[layer];
  if (i < 0) return;
  Layer& s = layers_[i];
  n = std::clamp(n, 0.0, s.wanted);
  s.wanted -= n;
  s.deferred += n;
}

void SmartgenKv::DeferredLanded(int layer, double n) {
  const int i = index_[layer];
  if (i < 0) return;
  Layer& s = layers_[i];
  s.deferred -= std::min(n, s.deferred);
}

double SmartgenKv::in_flight(int layer) const {
  const int i = index_[layer];
  return i < 0 ? 0.0 : layers_[i].requested;
}

double SmartgenKv::wanted(int layer) const {
  const int i = index_[layer];
  return i < 0 ? 0.0 : layers_[i].wanted;
}

double SmartgenKv::speculative_remaining() const {
  double r = 0;
  for (const Layer& s : layers_) r += s.never - s.never_present - s.never_fly - s.never_pred;
  return r;
}

double SmartgenKv::Mispredicted(int layer, double n) {
  const int i = index_[layer];
  if (i < 0 || n <= 0) return 0;
  Layer& s = layers_[i];
  const double take = std::clamp(s.never - s.never_present - s.never_fly - s.never_pred, 0.0, n);
  s.never_pred += take;
  return take;
}

void SmartgenKv::MispredictedLanded(int layer, double n) {
  const int i = index_[layer];
  if (i < 0) return;
  Layer& s = layers_[i];
  n = std::min(n, s.never_pred);
  s.never_pred -= n;
  s.never_present = std::min(s.never, s.never_present + n);
}

double SmartgenKv::selection_size(int layer) const {
  const int i = index_[layer];
  return i < 0 ? 0.0 : layers_[i].edges + layers_[i].k;
}

double SmartgenKv::layer_blocks(int layer) const {
  const int i = index_[layer];
  return i < 0 ? 0.0 : layers_[i].edges + layers_[i].never + layers_[i].selected;
}

double SmartgenKv::TakeSpeculative(double max_blocks) {
  const double pool = speculative_remaining();
  if (pool <= 0 || max_blocks <= 0) return 0;
  const double take = std::min(max_blocks, pool);
  for (Layer& s : layers_) {
    const double absent = s.never - s.never_present - s.never_fly - s.never_pred;
    s.never_fly += take * absent / pool;
  }
  return take;
}

void SmartgenKv::SpeculativeLanded() {
  for (Layer& s : layers_) {
    s.never_present = std::min(s.never, s.never_present + s.never_fly);
    s.never_fly = 0;
  }
}

double SmartgenKv::missing() const {
  double m = 0;
  for (const Layer& s : layers_) m += (s.never - s.never_present) + s.wanted + s.requested + s.deferred;
  return m;
}

}  // namespace smartgen::sim
