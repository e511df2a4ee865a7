// PrefillNode: one simulated prefill node. Requests run one at a time in arrival order
// (FIFO), layer by layer (CostModel::PrefillLayer, plus SmartGen's request scoring of the
// last query_window prompt queries). Per mode, on the request's link:
//   full       - the needed KV after the last layer (one transfer);
//   layerwise  - each layer's needed KV as soon as the layer is computed;
//   smartgen   - each layer's summaries and proactive blocks as it is computed, sized by
//                select::PlanProactiveBudget for proactive_fill x (link rate x the node's
//                prefill estimate), a window layer's window whole and without summaries;
//                after prefill, the speculative stream: one batch on the
//                wire at a time, select::SpeculativeBytesForStep of what is left, capped at
//                speculative_batch_s of link time (as node/prefill/speculative_sender does).
// With first_step (the default), SmartGen then runs the first decode step here
// (CostModel::FirstStepOnPrefill) and, after PrefillDone, pushes the absent part of step 1's
// selection at on-demand priority, as many blocks as select::FirstStepBlocks allows.
// Then PrefillDone (token 1) on the control class; token 1 goes to the client at once.
// "Needed" is the request's select::NeededBlocks (SimRequest::needed): with window_aware, a
// sliding-window layer's blocks before its window are never sent.
//
// Thread-safety: none. Borrowed pointers (queue, cost, options, requests) outlive the node.
#pragma once

#include <deque>
#include <functional>

#include "sim/cost_model.h"
#include "sim/event_queue.h"
#include "sim/request.h"
#include "sim/selection_stats.h"
#include "sim/sim_options.h"

namespace smartgen::sim {

class PrefillNode {
 public:
  struct Hooks {
    std::function<void(SimRequest*)> kv_progress;  // a start-condition transfer landed
    std::function<void(SimRequest*)> kv_changed;   // blocks landed (exactness may change)
    // Prefills now running whose KV goes over `link` (this one included); for
    // proactive_rate_share. May be empty (then 1).
    std::function<int(const Link*)> link_prefills;
  };

  PrefillNode(int index, EventQueue* queue, const CostModel* cost, const ClusterOptions* options,
              const SelectionStats* stats, Hooks hooks);

  // `r` has its mode (not auto), link and decode node set.
  void Enqueue(SimRequest* r);
  // Seconds of prefill work queued or running (the router's load figure).
  Seconds backlog_seconds() const;
  // The node's prefill-time estimate for n tokens (the cost model: a node that has measured
  // earlier prefills of that length).
  Seconds EstimatePrefill(std::int64_t n) const { return cost_->Prefill(n); }
  // The link of the request being prefilled, or nullptr.
  const Link* running_link() const { return running_ != nullptr ? running_->link : nullptr; }
  // The request ended on its decode node: cancel its speculative stream.
  void StopStream(SimRequest* r);

 private:
  void StartNext();
  void RunLayer(SimRequest* r, int layer);
  void PlanSmartgen(SimRequest* r);
  void PostSpeculative(SimRequest* r);
  void Push(SimRequest* r, Path path, double bytes, bool start_condition);
  void PushFirstStep(SimRequest* r);

  int index_;
  EventQueue* queue_;
  const CostModel* cost_;
  const ClusterOptions* options_;
  const SelectionStats* stats_;
  Hooks hooks_;
  std::deque<SimRequest*> fifo_;
  SimRequest* running_ = nullptr;
  Seconds running_end_ = 0;
  // SmartGen plan of the running request: bytes pushed at each layer's end.
  std::vector<double> summary_bytes_, proactive_bytes_;
};

}  // namespace smartgen::sim
