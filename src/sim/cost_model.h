// CostModel: compute time of prefill layers and decode steps on one Hardware for one
// ModelShape, a roofline per layer: max(FLOPs / effective FLOP/s, bytes / effective B/s)
// plus the hardware's per-layer overhead.
//
//   prefill layer, n tokens:  FLOPs = linear (2 x params x n) + causal attention;
//                             bytes = the layer's weights (read once per prefill).
//   decode step, layer:       FLOPs = 2 x params x batch + 4 x q_dim x attended keys;
//                             bytes = weights + K/V of the attended tokens of every sequence
//                             (with Hardware::attention_bytes_per_s: the weight roofline plus
//                             the K/V read at that rate, as the CPU engine's two phases).
//   output head:              once per prefill (last token) and once per step and sequence.
// A sequence attending selectively (SmartGen, KV incomplete) reads only its selected blocks
// and pays the scoring of its block summaries (SelectCost).
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>

#include "sim/event_queue.h"
#include "sim/hardware.h"
#include "sim/model_shape.h"

namespace smartgen::sim {

class CostModel {
 public:
  CostModel(const Hardware& hw, const ModelShape& shape) : hw_(hw), shape_(shape) {}

  const Hardware& hardware() const { return hw_; }
  const ModelShape& shape() const { return shape_; }

  // Prefill of tokens [0, n) in `layer`, and all of it (layers + output head).
  Seconds PrefillLayer(int layer, std::int64_t n) const;
  Seconds Prefill(std::int64_t n) const;
  // Time from the start of `layer`'s prefill until its K/V rows are in the cache: the share of
  // the layer's FLOPs in its QKV projection (model/forward.h: on_layer_kv runs before
  // attention and FFN).
  Seconds PrefillLayerKvReady(int layer, std::int64_t n) const;
  // The output head of the last prompt token.
  Seconds PrefillOutput() const;

  // One decode layer for a batch: `batch` sequences attending `attended_tokens` keys in
  // total in this layer (sum over the batch, window-limited by the caller).
  Seconds DecodeLayer(int batch, double attended_tokens) const;
  // The attention part of it: reading `attended_tokens` keys' K/V (Hardware::
  // attention_bytes_per_s, else at the decode rate).
  Seconds DecodeAttention(double attended_tokens) const;
  // DecodeLayer in the order the node runs it: the QKV projection (`qkv`), attention, then the
  // output projection and FFN (`rest`); the three add up to DecodeLayer. A SmartGen layer asks
  // for its missing blocks after the QKV projection and waits for them after local attention
  // (node/decode/smartgen_session.cc), so only attention overlaps the fetch.
  struct LayerPhases {
    Seconds qkv = 0, attention = 0, rest = 0;
  };
  LayerPhases DecodeLayerPhases(int batch, double attended_tokens) const;
  // A selective layer's local attention over `attended_tokens` keys of its present blocks, as
  // its own phase (Hardware::local_attention_bytes_per_s); 0 without that rate, where the keys
  // count with the layer's dense ones (DecodeLayerPhases).
  Seconds LocalAttention(double attended_tokens) const;
  // Output head of one step for `batch` sequences.
  Seconds DecodeOutput(int batch) const;
  // A whole dense step for `batch` sequences of `context` tokens each (for estimates).
  Seconds DecodeStep(int batch, std::int64_t context) const;
  // Scoring one layer's summaries of `n_blocks` blocks per KV head for one sequence.
  Seconds SelectCost(std::int64_t n_blocks) const;
  // Extra time of the first step after a KV cache of `bytes` was written (first touch).
  Seconds FirstTouch(double kv_bytes) const;
  // Extra time of a decode step after the node sat idle (Hardware::cold_read_bytes_per_s).
  Seconds ColdStep() const;
  // SmartGen's first decode step on the prefill node: a copy of the prompt's KV into fresh
  // blocks (first-touch writes) and one decode step over it (its exact attention ranks the
  // blocks; node/prefill/first_step.cc).
  Seconds FirstStepOnPrefill(std::int64_t n_prompt, double kv_bytes) const;

 private:
  Seconds Roofline(double flops, double bytes) const;
  // A prefill layer's FLOPs over n tokens, attention's weighted to the GEMMs' rate.
  double PrefillLayerFlops(int layer, std::int64_t n) const;
  Hardware hw_;
  ModelShape shape_;
};

}  // namespace smartgen::sim
