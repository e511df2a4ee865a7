#include "sim/decode_node.h"

#include <algorithm>

#include "select/path_sizing.h"

namespace smartgen::sim {

DecodeNode::DecodeNode(int index, EventQueue* queue, const CostModel* cost,
                       const ClusterOptions* options, const SelectionStats* stats, Hooks hooks)
    : index_(index), queue_(queue), cost_(cost), options_(options), stats_(stats),
      hooks_(std::move(hooks)) {}

void DecodeNode::EnqueuePrefill(SimRequest* r) {
  prefill_q_.push_back(r);
  Kick();
}

void DecodeNode::Admit(SimRequest* r) {
  waiting_.push_back(r);
  Kick();
}

int DecodeNode::load() const {
  return static_cast<int>(batch_.size() + waiting_.size() + prefill_q_.size());
}

bool DecodeNode::FitsMemory(const SimRequest* r) const {
  const double memory = cost_->hardware().memory_bytes;
  if (memory <= 0) return true;
  const ModelShape& s = cost_->shape();
  double kv = s.KvBytes(r->prompt_tokens + r->output_tokens);
  for (const SimRequest* b : batch_) kv += s.KvBytes(b->prompt_tokens + b->output_tokens);
  return batch_.empty() || s.WeightBytes() + kv <= memory;
}

void DecodeNode::Kick() {
  if (busy_) return;
  if (!prefill_q_.empty()) {
    SimRequest* r = prefill_q_.front();
    prefill_q_.pop_front();
    busy_ = true;
    r->prefill_start = queue_->now();
    queue_->After(cost_->Prefill(r->prompt_tokens), [this, r] {
      r->prefill_end = queue_->now();
      idle_since_ = queue_->now();
      worked_ = true;
      r->tokens.push_back(queue_->now());
      r->kv_ready = queue_->now();
      r->exact = queue_->now();
      busy_ = false;
      if (static_cast<int>(r->tokens.size()) >= r->output_tokens) {
        r->done = queue_->now();
        hooks_.finished(r);
      } else {
        waiting_.push_back(r);
      }
      Kick();
    });
    return;
  }
  StartStep();
}

void DecodeNode::StartStep() {
  while (!waiting_.empty() && static_cast<int>(batch_.size()) < options_->max_batch &&
         FitsMemory(waiting_.front())) {
    batch_.push_back(waiting_.front());
    waiting_.pop_front();
  }
  if (batch_.empty()) return;
  busy_ = true;
  ++steps_;
  step_start_ = queue_->now();
  step_stall_ = 0;
  step_charged_ = false;
  members_.clear();
  step_extra_ = cost_->DecodeOutput(static_cast<int>(batch_.size()));
  // A step after an idle spell reads the weights cold (the node waited for a transfer or a
  // request); back-to-back work keeps them warm.
  if (!worked_ || queue_->now() - idle_since_ >= cost_->hardware().cold_after_s) step_extra_ += cost_->ColdStep();
  bool any_selective = false;
  for (SimRequest* r : batch_) {
    const bool selective = r->kv != nullptr && !r->kv->exact();
    any_selective |= selective;
    members_.push_back({r, selective});
    // The KV this node wrote: the whole prompt's when it prefilled, else what it receives.
    if (r->decode_steps == 0) {
      step_extra_ +=
          cost_->FirstTouch(r->mode == Mode::kColocated ? r->full_kv_bytes : r->needed_kv_bytes);
    }
  }
  step_landed_ = MembersLanded();
  const ModelShape& s = cost_->shape();
  if (!any_selective) {
    // Dense step: one event.
    Seconds t = step_extra_;
    for (int l = 0; l < s.n_layers; ++l) {
      double attended = 0;
      for (const Member& m : members_) {
        attended += static_cast<double>(s.LayerKvTokens(l, m.r->prompt_tokens + m.r->decode_steps));
      }
      t += cost_->DecodeLayer(static_cast<int>(members_.size()), attended);
    }
    queue_->After(t, [this] { EndStep(); });
    return;
  }
  predicted_.assign(members_.size(), std::vector<LayerDemand>(s.n_layers));
  StartLayer(0);
}

void DecodeNode::Fetch(SimRequest* r, int layer, double blocks, Seconds delay) {
  if (blocks <= 0) return;
  r->step_requested += blocks;
  // Blocks come whole. Where a layer's expected demand is a sliver of a block (late steps: a
  // few absent blocks a step over all the layers), the node has a whole block absent in a few
  // layers and none in the rest, which do not wait. So a sliver is asked for without waiting
  // and carried; the layer where the carry reaches a block pulls it all and waits for it.
  // (Spread as slivers, every layer waited for a round trip: 30 per step.)
  std::vector<std::pair<int, double>> riders;
  if (blocks < 1.0) {
    if (r->carry + blocks < 1.0) {
      r->kv->Deferred(layer, blocks);
      r->carried.emplace_back(layer, blocks);
      r->carry += blocks;
      return;
    }
    riders.swap(r->carried);
    r->carry = 0;
  }
  r->kv->Requested(layer, blocks);
  Pull(r, layer, blocks, std::move(riders), delay);
}

void DecodeNode::FlushCarry(SimRequest* r) {
  if (r->carried.empty() || r->finished()) return;
  std::vector<std::pair<int, double>> riders;
  riders.swap(r->carried);
  r->carry = 0;
  Pull(r, -1, 0, std::move(riders), 0);
}

void DecodeNode::Pull(SimRequest* r, int layer, double blocks, std::vector<std::pair<int, double>> riders,
                      Seconds delay) {
  double total = blocks;
  for (const auto& [l, n] : riders) total += n;
  const double bytes = total * r->block_bytes;
  r->bytes[static_cast<int>(Path::kOnDemand)] += bytes;
  Link* link = r->link;
  // The request leaves `delay` from now, crosses to the prefill node (one way), the blocks come
  // back on the link.
  queue_->After(delay + link->config().latency_s, [this, r, layer, blocks, bytes, link,
                                                   riders = std::move(riders)]() mutable {
    if (r->finished()) {  // the request ended before its pull reached the prefill node
      r->bytes[static_cast<int>(Path::kOnDemand)] -= bytes;
      return;
    }
    // Recorded with the pushes: what is still queued when the request ends is cancelled.
    const std::uint64_t id = link->Send(Path::kOnDemand, bytes, [this, r, layer, blocks, bytes,
                                                                 riders = std::move(riders)] {
      r->landed_bytes += bytes;
      if (layer >= 0) r->kv->Landed(layer, blocks);
      for (const auto& [l, n] : riders) r->kv->DeferredLanded(l, n);
      hooks_.kv_changed(r);  // the cluster calls BlocksLanded
    }, r->block_bytes);  // ranked, scattered blocks: runs of about one block per frame
    r->pushes.push_back({Path::kOnDemand, id});
  });
}

void DecodeNode::MispredictFetch(SimRequest* r, int layer, double blocks, Seconds delay) {
  blocks = r->kv->Mispredicted(layer, blocks);
  if (blocks <= 0) return;
  r->mispredicted += blocks;
  r->step_requested += blocks;
  const double bytes = blocks * r->block_bytes;
  r->bytes[static_cast<int>(Path::kOnDemand)] += bytes;
  Link* link = r->link;
  queue_->After(delay + link->config().latency_s, [this, r, layer, blocks, bytes, link] {
    if (r->finished()) {
      r->bytes[static_cast<int>(Path::kOnDemand)] -= bytes;
      return;
    }
    const std::uint64_t id = link->Send(Path::kOnDemand, bytes, [this, r, layer, blocks, bytes] {
      r->landed_bytes += bytes;
      r->kv->MispredictedLanded(layer, blocks);
      hooks_.kv_changed(r);
    }, r->block_bytes);
    r->pushes.push_back({Path::kOnDemand, id});
  });
}

void DecodeNode::StartLayer(int layer) {
  layer_ = layer;
  ++layer_id_;
  layer_open_ = true;
  compute_done_ = deadline_passed_ = false;
  layer_start_ = queue_->now();
  const ModelShape& s = cost_->shape();
  const SmartgenSimOptions& o = options_->smartgen;
  double attended = 0;
  Seconds local_attention_s = 0;  // the selective members' own phase, where the rate is its own
  Seconds select_cost = 0;
  Seconds bound = 0;  // the longest wait any member's session allows this layer
  // Fetches leave after the QKV projection and the member's scoring (as on the node).
  const Seconds qkv = cost_->DecodeLayerPhases(static_cast<int>(members_.size()), 0).qkv;
  for (std::size_t i = 0; i < members_.size(); ++i) {
    SimRequest* r = members_[i].r;
    const std::int64_t ctx = r->prompt_tokens + r->decode_steps;
    if (!members_[i].selective || !r->kv->selective(layer)) {
      attended += static_cast<double>(s.LayerKvTokens(layer, ctx));
      continue;
    }
    const int step = r->decode_steps + 1;
    // Selected already when layer - 1 predicted it.
    const bool predicted = predicted_[i][layer].selected > 0;
    const LayerDemand d = predicted ? predicted_[i][layer] : r->kv->Select(layer, step, *stats_);
    // attend_present: every block present (the selection decides only what is fetched);
    // else the selected ones (what lands in time is merged: counted as selected).
    const double blocks = o.attend_present ? std::max(r->kv->present(layer), d.selected - d.absent) : d.selected;
    const double local_tokens = blocks / s.n_kv_heads * options_->block_tokens + r->decode_steps;
    const Seconds local_attention = cost_->LocalAttention(local_tokens);
    if (local_attention > 0) {
      local_attention_s += local_attention;
    } else {
      attended += local_tokens;
    }
    // The request leaves once the member's scores are in; its block lists and bookkeeping
    // (selective_layer_s) follow while the blocks are on the way.
    const double first = r->decode_steps == 0 ? cost_->hardware().first_select_extra : 0.0;
    select_cost += (1 + first) * cost_->SelectCost(r->kv->n_prompt_blocks());
    const Seconds asked_at = qkv + select_cost;
    select_cost += cost_->hardware().selective_layer_s;
    r->selected_blocks += d.selected;
    if (!o.fetch_on_demand) {
      r->absent_at_deadline += d.absent;
      continue;
    }
    // The node's fetch cap: what the link brings in about two steps, per layer.
    const double cap = static_cast<double>(select::FetchCapBlocks(
        o, r->link->bytes_per_second(), r->step_ms, r->block_bytes, s.n_layers));
    Fetch(r, layer, std::min(r->kv->wanted(layer), cap), asked_at);
    // Layer l+1's guess (select::UsePrediction, as the node): scored only while unchecked,
    // requested while it pays.
    const select::PredictionUse use = select::UsePrediction(
        r->predicted_checked, r->predicted_checked * stats_->predictor_hit);
    if (o.predict_next && use != select::PredictionUse::kOff && layer + 1 < s.n_layers &&
        r->kv->selective(layer + 1)) {
      // The guess's absent blocks: those of a selection that size; the hits are what layer l+1
      // then selects, the rest are fetched for nothing but land all the same.
      const double all = r->kv->layer_blocks(layer + 1);
      const double guessed =
          all > 0 ? r->kv->selection_size(layer + 1) * (1.0 - r->kv->present(layer + 1) / all) : 0.0;
      r->predicted_checked += guessed;
      if (use == select::PredictionUse::kFetch) {
        const LayerDemand next = r->kv->Select(layer + 1, step, *stats_);
        predicted_[i][layer + 1] = next;
        const double asked = std::min(cap, guessed);
        const double hits = std::min(next.to_fetch, asked * stats_->predictor_hit);
        Fetch(r, layer + 1, hits, asked_at);
        MispredictFetch(r, layer + 1, asked * (1.0 - stats_->predictor_hit), asked_at);
        r->predicted_asked += asked;
      }
    }
    // The node's wait bound: its share of the step, or the layer's own attention time.
    const Seconds own_attention = local_attention > 0 ? local_attention : cost_->DecodeAttention(local_tokens);
    Seconds b = select::LayerWaitBoundMs(o, r->step_compute_ms, own_attention * 1e3, s.n_layers) / 1e3;
    // The first step waits for the prefill node's blocks until first_wait_ms after PrefillDone.
    if (step == 1 && o.first_step && r->prefill_done_at >= 0) {
      b = std::max(b, r->prefill_done_at + o.first_wait_ms / 1e3 - queue_->now());
    }
    bound = std::max(bound, b);
  }
  // The layer waits for its fetches after QKV, selection and local attention; the output
  // projection and FFN follow the wait.
  const CostModel::LayerPhases phases = cost_->DecodeLayerPhases(static_cast<int>(members_.size()), attended);
  const Seconds compute = phases.qkv + select_cost + phases.attention + local_attention_s;
  layer_compute_ = compute;
  layer_rest_ = phases.rest;
  const std::uint64_t id = layer_id_;
  queue_->After(compute, [this, id] {
    if (id != layer_id_) return;
    compute_done_ = true;
    TryFinishLayer();
  });
  if (bound * 1e3 < kWaitUntilLandedMs) {  // else: until every fetch landed
    // A wait that runs to its bound ends the decode thread's wake-up later.
    queue_->After(compute + bound + cost_->hardware().wait_overrun_s, [this, id] {
      if (id != layer_id_) return;
      deadline_passed_ = true;
      TryFinishLayer();
    });
  }
}

void DecodeNode::BlocksLanded() {
  if (busy_ && layer_open_) TryFinishLayer();
}

bool DecodeNode::Awaiting(int layer) const {
  if (!options_->smartgen.fetch_on_demand) return false;  // nothing is awaited (the node's rule)
  for (const Member& m : members_) {
    if (m.selective && m.r->kv->selective(layer) && m.r->kv->in_flight(layer) > 1e-6) return true;
  }
  return false;
}

void DecodeNode::TryFinishLayer() {
  if (!layer_open_ || !compute_done_) return;
  if (!deadline_passed_ && Awaiting(layer_)) return;
  FinishLayer();
}

void DecodeNode::FinishLayer() {
  const int layer = layer_;
  ++layer_id_;  // stale timers of this layer are ignored from here on
  layer_open_ = false;
  step_stall_ += std::max(0.0, queue_->now() - layer_start_ - layer_compute_);
  for (const Member& m : members_) {
    if (m.selective && m.r->kv->selective(layer)) m.r->absent_at_deadline += m.r->kv->in_flight(layer);
  }
  if (layer + 1 < cost_->shape().n_layers) {
    queue_->After(layer_rest_, [this, layer] { StartLayer(layer + 1); });
    return;
  }
  queue_->After(layer_rest_ + step_extra_, [this] { EndStep(); });
}

double DecodeNode::MembersLanded() const {
  double b = 0;
  for (const Member& m : members_) b += m.r->landed_bytes;
  return b;
}

void DecodeNode::EndStep() {
  const Seconds now = queue_->now();
  // The bytes that landed while the step computed took CPU from it: the step ends that much
  // later (once; what lands during the extension is not charged). Its link waits left the
  // cores free, so only the computing share of the step pays.
  if (!step_charged_ && cost_->hardware().transfer_cpu_s_per_byte > 0 && now > step_start_) {
    step_charged_ = true;
    const double computing = 1.0 - std::min(1.0, step_stall_ / (now - step_start_));
    const Seconds charge =
        (MembersLanded() - step_landed_) * cost_->hardware().transfer_cpu_s_per_byte * computing;
    if (charge > 0) {
      queue_->After(charge, [this] { EndStep(); });
      return;
    }
  }
  idle_since_ = now;
  worked_ = true;
  // The session's step figures (EWMA 0.8 / 0.2, as node/decode SmartgenSession keeps them).
  const double step_ms = (now - step_start_) * 1e3, own_ms = std::max(0.0, step_ms - step_stall_ * 1e3);
  for (const Member& m : members_) {
    SimRequest* r = m.r;
    r->step_ms = r->step_ms == 0 ? step_ms : 0.8 * r->step_ms + 0.2 * step_ms;
    r->step_compute_ms = r->step_compute_ms == 0 ? own_ms : 0.8 * r->step_compute_ms + 0.2 * own_ms;
    r->stall_s += step_stall_;
    r->stall_per_step_s.push_back(step_stall_);
    r->requested_per_step.push_back(r->step_requested);
    r->step_requested = 0;
  }
  std::vector<SimRequest*> still;
  for (SimRequest* r : batch_) {
    // Slivers carried while nothing else is missing: the last absent blocks, pulled now.
    if (r->kv != nullptr && r->kv->missing() - r->carry < 0.5) FlushCarry(r);
    r->tokens.push_back(now);
    ++r->decode_steps;
    if (static_cast<int>(r->tokens.size()) >= r->output_tokens) {
      r->done = now;
      hooks_.finished(r);
    } else {
      still.push_back(r);
    }
  }
  batch_ = std::move(still);
  busy_ = false;
  Kick();
}

}  // namespace smartgen::sim
