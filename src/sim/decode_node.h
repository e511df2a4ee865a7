// DecodeNode: one simulated decode node with continuous batching.
//
// Between steps it admits requests whose KV start condition holds (up to max_batch, and as
// far as their KV fits the device memory next to the weights) and, for colocated requests,
// runs their prefill itself first (a prefill stalls the batch, as without chunked prefill).
// A step runs the layers in order; layer time = CostModel::DecodeLayer over the batch (dense
// sequences read all their KV; SmartGen sequences that are not exact read, with attend_present
// (the default), every block present, else their selected blocks, and score their summaries).
// A SmartGen sequence that is not exact selects per layer (SmartgenKv::Select) and fetches what
// is missing, at most select::FetchCapBlocks, in one on-demand batch on its link, after the
// request's one-way trip to the prefill node; with next-layer prediction (predict_next) layer
// l guesses layer l+1's absent blocks and, once select::UsePrediction says the guess pays (at
// SelectionStats::predictor_hit, after its unfetched warm-up), posts them at layer l: the hit
// share lands for layer l+1, the rest is fetched for nothing.
// The layer ends when its compute is done and nothing it awaits is on the wire, or when the
// node's wait bound (select::LayerWaitBoundMs on the request's step figures; the first step
// until first_wait_ms after PrefillDone) has passed beyond the compute. Awaited, as the node's
// SmartgenSession awaits every selected block that is requested or pushed to it: the layer's
// requested blocks still in flight (this step's fetches, earlier steps' and the prefill node's
// first-step push, which step 1 selects). Late blocks land later and are used from that step
// on. wait_bound_ms >= kWaitUntilLandedMs: until landed.
// At the end of a step every sequence in the batch emits a token. The first step of a
// sequence pays CostModel::FirstTouch over its KV.
//
// Thread-safety: none. Borrowed pointers outlive the node.
#pragma once

#include <deque>
#include <functional>
#include <utility>
#include <vector>

#include "sim/cost_model.h"
#include "sim/event_queue.h"
#include "sim/request.h"
#include "sim/selection_stats.h"
#include "sim/sim_options.h"

namespace smartgen::sim {

class DecodeNode {
 public:
  struct Hooks {
    std::function<void(SimRequest*)> finished;    // last token emitted
    std::function<void(SimRequest*)> kv_changed;  // on-demand blocks landed
  };

  DecodeNode(int index, EventQueue* queue, const CostModel* cost, const ClusterOptions* options,
             const SelectionStats* stats, Hooks hooks);

  // Blocks of a request decoding here landed (on-demand or the prefill node's first step): a
  // layer waiting for them may end.
  void BlocksLanded();
  // A colocated request: prefill here, then decode.
  void EnqueuePrefill(SimRequest* r);
  // The request's KV start condition holds: it joins the batch at the next step.
  void Admit(SimRequest* r);
  // Requests running, waiting or prefilling here (the router's load figure).
  int load() const;
  std::uint64_t steps() const { return steps_; }

 private:
  struct Member {
    SimRequest* r;
    bool selective;  // SmartGen, not exact at the step's start
  };
  void Kick();
  void StartStep();
  void StartLayer(int layer);
  // An on-demand fetch of `blocks` of the layer's wanted blocks, `delay` from now: whole
  // blocks, or a sliver carried until the carry reaches one (the .cc says why).
  void Fetch(SimRequest* r, int layer, double blocks, Seconds delay);
  // One pull on the link: the layer's blocks (layer -1: none) and the carried slivers riding
  // with them.
  void Pull(SimRequest* r, int layer, double blocks, std::vector<std::pair<int, double>> riders,
            Seconds delay);
  // The carried slivers, pulled without a layer waiting for them.
  void FlushCarry(SimRequest* r);
  // A prediction's wrong blocks: fetched on demand, land as never-selected present blocks.
  void MispredictFetch(SimRequest* r, int layer, double blocks, Seconds delay);
  bool Awaiting(int layer) const;  // a member's requested blocks of `layer` are in flight
  void TryFinishLayer();
  void FinishLayer();
  void EndStep();
  double MembersLanded() const;
  bool FitsMemory(const SimRequest* r) const;

  int index_;
  EventQueue* queue_;
  const CostModel* cost_;
  const ClusterOptions* options_;
  const SelectionStats* stats_;
  Hooks hooks_;
  std::deque<SimRequest*> prefill_q_, waiting_;
  std::vector<SimRequest*> batch_;
  bool busy_ = false;
  std::uint64_t steps_ = 0;

  // The running step.
  std::vector<Member> members_;
  Seconds step_extra_ = 0;
  Seconds idle_since_ = 0;  // when the node last finished a prefill or a step (0: never worked)
  bool worked_ = false;
  int layer_ = 0;
  std::uint64_t layer_id_ = 0;  // increments per layer run (stale events are ignored)
  std::vector<std::vector<LayerDemand>> predicted_;  // [member][layer] selected by prediction
  bool layer_open_ = false;  // a layer runs (false from its end until the next starts)
  bool compute_done_ = false, deadline_passed_ = false;
  Seconds step_start_ = 0, step_stall_ = 0;      // the running step's start and link waits
  double step_landed_ = 0;     // the members' landed_bytes when the step started
  bool step_charged_ = false;  // the step paid for the bytes that landed during it
  Seconds layer_start_ = 0, layer_compute_ = 0;  // the running layer's (compute: up to its wait)
  Seconds layer_rest_ = 0;                        // its output projection and FFN, after the wait
};

}  // namespace smartgen::sim
