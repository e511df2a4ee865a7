// Shared fixtures of the simulator tests: an idealised node (no overheads, no first-touch
// cost) and one-prefill/one-decode cluster specs.
#pragma once

#include <gtest/gtest.h>

#include "sim/cluster.h"
#include "sim/cost_model.h"
#include "sim/model_shape.h"
#include "sim/report.h"

namespace smartgen::sim::testing {

inline Hardware IdealNode() {
  Hardware h;
  h.name = "ideal";
  h.peak_flops = 2e12;
  h.mem_bytes_per_s = 50e9;
  h.compute_eff = 1;
  h.mem_eff = 1;
  h.select_flops = 50e9;
  return h;
}

inline ClusterSpec OnePairSpec(Mode mode, double gbps, double latency_s = 0.001) {
  ClusterSpec spec;
  spec.model = *ModelShapeByName("smollm2-135m");
  spec.prefill_hw = spec.decode_hw = IdealNode();
  spec.stats = *SelectionStatsByName("random-weights");
  spec.options.mode = mode;
  spec.options.link.gbps = gbps;
  spec.options.link.latency_s = latency_s;
  return spec;
}

// Link rate that makes the full KV of n tokens take R x the prefill on `spec`'s prefill node.
inline double GbpsForRatio(const ClusterSpec& spec, std::int64_t n, double r) {
  const CostModel c(spec.prefill_hw, spec.model);
  return spec.model.KvBytes(n) * 8 / (r * c.Prefill(n)) / 1e9;
}

inline SimResult RunOne(const ClusterSpec& spec, std::int64_t prompt, int output, int n = 1) {
  WorkloadOptions w;
  w.prompt_min = w.prompt_max = prompt;
  w.output_min = w.output_max = output;
  auto r = RunCluster(spec, FixedBatch(n, 0, w));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

// The KV block of one layer and KV head as the link carries it (sim/cluster.cc).
inline double BlockBytes(const ClusterSpec& spec) {
  return spec.model.KvBytesPerTokenLayer() / spec.model.n_kv_heads * spec.options.block_tokens;
}

// Seconds `bytes` of payload take on `spec`'s link in frames of `frame` payload bytes (0 = the
// engine's frame of whole blocks), each with its header.
inline double WireSeconds(const ClusterSpec& spec, double bytes, double frame = 0) {
  const LinkConfig& link = spec.options.link;
  if (frame <= 0) frame = EngineFrameBytes(link.gbps, BlockBytes(spec));
  return bytes * (frame + link.header_bytes) / frame / (link.gbps * 1e9 / 8);
}

// A 64-byte control message (PrefillDone) in the link's own frame.
inline double ControlSeconds(const ClusterSpec& spec) {
  return WireSeconds(spec, 64, EngineFrameBytes(spec.options.link.gbps));
}

inline double Ttst(const SimRequest& r) { return r.tokens.at(1) - r.tokens.at(0); }
inline double Ttft(const SimRequest& r) { return r.tokens.at(0) - r.arrival; }

}  // namespace smartgen::sim::testing
