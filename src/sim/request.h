// SimRequest: one simulated request's identity, its timeline, and its per-path bytes; owned
// by the Cluster for the whole run (nodes hold raw pointers that never outlive it).
// A request's life: arrived -> prefilling (prefill node, or its decode node when colocated)
// -> awaiting KV (its mode's start condition) -> decoding (in the decode node's batch) ->
// done. Times are simulated seconds; -1 = not reached.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "sim/link.h"
#include "sim/sim_options.h"
#include "sim/smartgen_kv.h"

namespace smartgen::sim {

struct SimRequest {
  int id = 0;
  Seconds arrival = 0;
  std::int64_t prompt_tokens = 0;
  int output_tokens = 0;  // including token 1 (from the prefill node)
  Mode mode = Mode::kSmartgen;  // resolved (never kAuto)
  int prefill_node = -1, decode_node = -1;
  Link* link = nullptr;         // prefill -> decode KV link (null when colocated)

  // Timeline.
  Seconds prefill_start = -1, prefill_end = -1;
  Seconds kv_ready = -1;        // the mode's start condition held at the decode node
  Seconds exact = -1;           // every prompt block on the decode node
  Seconds done = -1;
  std::vector<Seconds> tokens;  // arrival time of each token at the client, token 1 first

  // Start condition bookkeeping: KV transfers (or proactive pushes) not landed yet.
  int pending_kv = 0;
  int pending_proactive = 0;       // SmartGen proactive pushes not landed
  bool prefill_done_seen = false;  // PrefillDone (token 1) reached the decode node
  Seconds prefill_done_at = -1;    // when it did
  bool first_wait_armed = false;   // SmartGen first step: the first_wait_ms timer runs
  bool first_wait_over = false;    // first_wait_ms has passed since PrefillDone

  // SmartGen.
  std::unique_ptr<SmartgenKv> kv;
  int decode_steps = 0;
  std::uint64_t spec_transfer = 0;  // the speculative batch on the wire (0 = none)
  double spec_blocks_in_flight = 0;
  double block_bytes = 0;
  double step_ms = 0;               // EWMA of this request's decode steps (the node's figure)
  double step_compute_ms = 0;       // the same less the link waits (what the wait bound scales)
  double selected_blocks = 0;       // summed over steps and layers
  double absent_at_deadline = 0;    // selected blocks not present when the layer attended
  double cancelled_bytes = 0;       // pushed or speculative bytes never sent (request ended first)
  double predicted_checked = 0;     // blocks predictions guessed, scored (select::UsePrediction)
  double predicted_asked = 0;       // of those, blocks requested (once the guess paid)
  double mispredicted = 0;          // of those, blocks no step then selected
  // On-demand slivers (fetches of less than a block) not yet pulled: (layer, blocks), and their
  // sum (DecodeNode::Fetch).
  std::vector<std::pair<int, double>> carried;
  double carry = 0;
  double stall_s = 0;  // decode steps' waits for fetches, summed (the node's layer_stall_ms)
  std::vector<double> stall_per_step_s;  // the same per decode step (stall_ms_per_step)
  double step_requested = 0;  // blocks the running step asked for on demand
  std::vector<double> requested_per_step;  // per decode step (blocks_requested_per_step)
  double landed_bytes = 0;  // KV bytes of it that landed on its decode node, every path
  // SmartGen transfers of this request on its link (pushes, first step, on-demand pulls): what
  // is still queued when it ends is cancelled, as the node's CancelRequest does.
  std::vector<std::pair<Path, std::uint64_t>> pushes;

  std::array<double, static_cast<int>(Path::kCount)> bytes{};
  // What the decode needs of the prompt (select::PromptNeededBlocks, the nodes' rule: a
  // sliding-window layer's window when window-aware), the prompt's whole KV in blocks (the
  // nodes' kv_bytes: what R and proactive_ratio are relative to) and the needed part of it
  // (what full and layerwise send).
  select::NeededBlocks needed;
  double full_kv_bytes = 0;
  double needed_kv_bytes = 0;

  bool finished() const { return done >= 0; }
};

}  // namespace smartgen::sim
