#include "sim/prefill_node.h"

#include <algorithm>

#include "kv/kv_geometry.h"
#include "select/path_sizing.h"
#include "select/proactive.h"
#include "select/speculative.h"

namespace smartgen::sim {

PrefillNode::PrefillNode(int index, EventQueue* queue, const CostModel* cost,
                         const ClusterOptions* options, const SelectionStats* stats, Hooks hooks)
    : index_(index), queue_(queue), cost_(cost), options_(options), stats_(stats),
      hooks_(std::move(hooks)) {}

void PrefillNode::Enqueue(SimRequest* r) {
  fifo_.push_back(r);
  if (running_ == nullptr) StartNext();
}

Seconds PrefillNode::backlog_seconds() const {
  Seconds s = running_ != nullptr ? std::max(0.0, running_end_ - queue_->now()) : 0.0;
  for (const SimRequest* r : fifo_) s += EstimatePrefill(r->prompt_tokens);
  return s;
}

void PrefillNode::StartNext() {
  if (fifo_.empty()) {
    running_ = nullptr;
    return;
  }
  SimRequest* r = fifo_.front();
  fifo_.pop_front();
  running_ = r;
  running_end_ = queue_->now() + EstimatePrefill(r->prompt_tokens);
  r->prefill_start = queue_->now();
  r->pending_kv = 0;
  if (r->mode == Mode::kSmartgen) PlanSmartgen(r);
  RunLayer(r, 0);
}

void PrefillNode::PlanSmartgen(SimRequest* r) {
  const ModelShape& shape = cost_->shape();
  const SmartgenSimOptions& o = options_->smartgen;
  const std::int64_t n = r->prompt_tokens;
  // The proactive set: what the link carries while prefill runs (node/prefill/prefill_node).
  double rate = r->link->bytes_per_second();
  if (o.proactive_rate_share && hooks_.link_prefills) rate /= std::max(1, hooks_.link_prefills(r->link));
  const std::int64_t budget = select::ProactiveBudgetFor(
      o, static_cast<std::int64_t>(r->full_kv_bytes), rate, EstimatePrefill(n));
  // The node's plan: window layers push their window whole and have no summaries; the other
  // layers share what is left (select::PlanProactiveBudget with the request's needs).
  kv::KvGeometry geometry;
  geometry.n_layers = shape.n_layers;
  geometry.n_kv_heads = shape.n_kv_heads;
  geometry.head_dim = shape.head_dim;
  geometry.block_tokens = options_->block_tokens;
  const select::ProactiveBudget plan =
      select::PlanProactiveBudget(geometry, n, budget, nullptr, o.proactive, &r->needed);
  int n_summarised = 0;
  for (int l = 0; l < shape.n_layers; ++l) n_summarised += r->needed.IsWindowLayer(l) ? 0 : 1;
  summary_bytes_.assign(shape.n_layers, 0);
  proactive_bytes_.assign(shape.n_layers, 0);
  for (int l = 0; l < shape.n_layers; ++l) {
    if (!r->needed.IsWindowLayer(l))
      summary_bytes_[l] = static_cast<double>(plan.summary_bytes) / n_summarised;
    proactive_bytes_[l] = static_cast<double>(plan.layer_blocks[l]) * r->block_bytes;
  }
  r->kv = std::make_unique<SmartgenKv>(shape, r->needed, o, plan.layer_blocks);
}

void PrefillNode::Push(SimRequest* r, Path path, double bytes, bool start_condition) {
  // Proactive blocks hold the start only until the first-step wait ends (kv_progress).
  int* pending = path == Path::kProactive ? &r->pending_proactive : &r->pending_kv;
  if (start_condition) ++*pending;
  r->bytes[static_cast<int>(path)] += bytes;
  // Proactive blocks are ranked and scattered: runs of about one block per frame; the bulk
  // paths send a layer's adjacent blocks in the engine's frames of whole blocks.
  const double frame = path == Path::kProactive ? r->block_bytes
                                                : EngineFrameBytes(r->link->config().gbps, r->block_bytes);
  const std::uint64_t id = r->link->Send(path, bytes, [this, r, start_condition, pending, bytes] {
    r->landed_bytes += bytes;
    if (start_condition) {
      --*pending;
      hooks_.kv_progress(r);
    }
  }, frame);
  // SmartGen requests can end before their pushes land (decoding starts at the first-step
  // wait): what is still queued then is cancelled with the stream (StopStream).
  if (r->mode == Mode::kSmartgen) r->pushes.push_back({path, id});
}

void PrefillNode::PushFirstStep(SimRequest* r) {
  const ModelShape& s = cost_->shape();
  const SmartgenSimOptions& o = options_->smartgen;
  const double cap = static_cast<double>(select::FirstStepBlocks(
      o, r->link->bytes_per_second(), r->block_bytes, s.n_layers, s.n_kv_heads));
  if (r->kv->PlanFirstStep(*stats_, cap) <= 0) return;
  // Rank-interleaved across layers: what lands first serves every layer; one transfer per layer
  // in layer order is the simulator's version (the decode node's layers run in that order).
  for (int l = 0; l < s.n_layers; ++l) {
    const double blocks = r->kv->first_step(l);
    if (blocks <= 0) continue;
    r->bytes[static_cast<int>(Path::kFirstStep)] += blocks * r->block_bytes;
    const std::uint64_t id = r->link->Send(Path::kFirstStep, blocks * r->block_bytes, [this, r, l, blocks] {
      r->landed_bytes += blocks * r->block_bytes;
      r->kv->Landed(l, blocks);
      hooks_.kv_changed(r);
    }, r->block_bytes);
    r->pushes.push_back({Path::kFirstStep, id});
  }
}

void PrefillNode::RunLayer(SimRequest* r, int layer) {
  const ModelShape& shape = cost_->shape();
  Seconds t = cost_->PrefillLayer(layer, r->prompt_tokens);
  if (r->mode == Mode::kSmartgen && !r->needed.IsWindowLayer(layer)) {
    // SnapKV-style scores: the last query_window queries against every prompt key of the
    // layer (select::RequestScores; a window layer is pushed whole: no scores).
    const double flops = 4.0 * options_->smartgen.query_window * shape.q_dim() *
                         static_cast<double>(r->prompt_tokens);
    t += flops / cost_->hardware().prefill_flops();
  }
  if (layer + 1 == shape.n_layers) t += cost_->PrefillOutput();  // logits of the last token
  // The layer's K/V rows are in the cache after its QKV projection, before attention and FFN
  // (model/forward.h on_layer_kv): pushes start then.
  queue_->After(cost_->PrefillLayerKvReady(layer, r->prompt_tokens), [this, r, layer] {
    if (r->mode == Mode::kLayerwise) {
      Push(r, Path::kLayerwise, static_cast<double>(r->needed.InLayer(layer)) * r->block_bytes,
           true);
    }
    if (r->mode == Mode::kSmartgen) {
      if (summary_bytes_[layer] > 0) Push(r, Path::kSummary, summary_bytes_[layer], true);
      Push(r, Path::kProactive, proactive_bytes_[layer], true);
    }
  });
  queue_->After(t, [this, r, layer] {
    const ModelShape& s = cost_->shape();
    if (layer + 1 < s.n_layers) {
      RunLayer(r, layer + 1);
      return;
    }
    // Prefill done: the KV of full mode; SmartGen's first step (one decode step on a copy of
    // the KV, node/prefill/first_step.cc) before token 1; then PrefillDone (token 1 to the
    // client at once), the first step's blocks at on-demand priority, the stream.
    r->prefill_end = queue_->now();
    if (r->mode == Mode::kFull) Push(r, Path::kFull, r->needed_kv_bytes, true);
    const bool first_step = r->mode == Mode::kSmartgen && options_->smartgen.first_step;
    const Seconds t_first = first_step ? cost_->FirstStepOnPrefill(r->prompt_tokens, r->full_kv_bytes) : 0;
    queue_->After(t_first, [this, r, first_step] {
      r->tokens.push_back(queue_->now());
      ++r->pending_kv;
      // Control frames overtake data: PrefillDone goes before the first step's blocks.
      r->link->Send(Path::kControl, 64, [this, r] {
        r->prefill_done_seen = true;
        r->prefill_done_at = queue_->now();
        --r->pending_kv;
        hooks_.kv_progress(r);
      });
      if (first_step) PushFirstStep(r);
      if (r->mode == Mode::kSmartgen && options_->smartgen.speculative) PostSpeculative(r);
      StartNext();
    });
  });
}

void PrefillNode::PostSpeculative(SimRequest* r) {
  r->spec_transfer = 0;
  if (r->finished() || r->kv == nullptr) return;
  const double bb = r->block_bytes;
  const double remaining_blocks = r->kv->speculative_remaining();
  if (remaining_blocks < 0.5) return;
  std::int64_t bytes = select::SpeculativeBytesForStep(
      options_->smartgen.pacing, static_cast<std::int64_t>(remaining_blocks * bb),
      static_cast<std::size_t>(bb));
  bytes = std::min<std::int64_t>(
      bytes, static_cast<std::int64_t>(r->link->bytes_per_second() * options_->smartgen.speculative_batch_s));
  const double blocks = r->kv->TakeSpeculative(std::max(1.0, static_cast<double>(bytes) / bb));
  if (blocks <= 0) return;
  r->spec_blocks_in_flight = blocks;
  r->bytes[static_cast<int>(Path::kSpeculative)] += blocks * bb;
  r->spec_transfer = r->link->Send(Path::kSpeculative, blocks * bb, [this, r, blocks, bb] {
    r->landed_bytes += blocks * bb;
    r->spec_transfer = 0;
    r->spec_blocks_in_flight = 0;
    r->kv->SpeculativeLanded();
    hooks_.kv_changed(r);
    PostSpeculative(r);
  }, bb);  // interleaved layers in importance order: one-block runs
}

void PrefillNode::StopStream(SimRequest* r) {
  // Pushes still queued or on the wire (the node's CancelRequest drops them too).
  for (const auto& [path, id] : r->pushes) {
    const double unsent = r->link->Cancel(id);
    r->bytes[static_cast<int>(path)] -= unsent;
    r->cancelled_bytes += unsent;
  }
  r->pushes.clear();
  if (r->kv == nullptr) return;
  double never = r->kv->speculative_remaining() * r->block_bytes;
  if (r->spec_transfer != 0) {
    const double unsent = r->link->Cancel(r->spec_transfer);
    r->bytes[static_cast<int>(Path::kSpeculative)] -= unsent;
    never += unsent;
    r->spec_transfer = 0;
  }
  r->cancelled_bytes += never;
}

}  // namespace smartgen::sim
