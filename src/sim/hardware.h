// Hardware: the compute node the simulator runs prefill and decode on, as data.
//
// A node is described by its peak dense FP16/BF16 tensor rate, its memory bandwidth, and the
// share of each that an inference engine reaches (efficiency factors), plus small fixed
// costs. GPU peaks are datasheet figures (cited per preset in hardware.cc). The efficiency
// factors of the Hopper presets (H100, H200) were measured on an H200 (bench/gpu_presets.py,
// docs/RESULTS.md "GPU preset figures measured on an H200"); those of the Ampere and Ada
// presets (A10, A100, L20) are stated assumptions (docs/RESULTS.md, "Cluster simulator").
// The CPU preset is the 2-core development machine, calibrated from measured figures
// (docs/RESULTS.md) or from `smartgen bench engine --json` output (CalibrateCpu).
//
// Thread-safety: plain data.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/result.h"

namespace smartgen::sim {

struct Hardware {
  std::string name;
  double peak_flops = 0;        // dense FP16/BF16, FLOP/s
  double mem_bytes_per_s = 0;   // peak memory bandwidth, B/s
  double compute_eff = 0.5;     // share of peak_flops prefill GEMMs reach
  // Share of peak_flops a prefill's causal attention reaches (its own kernel); 0 = compute_eff.
  double attention_compute_eff = 0;
  double mem_eff = 0.75;        // share of the bandwidth a decode step reaches
  double memory_bytes = 0;      // device memory (0 = unbounded); bounds the decode batch's KV
  double layer_overhead_s = 0;  // per layer and step: kernel launches, thread-pool barriers
  // Rate at which the first decode step after a KV cache was written reads it (the CPU VM's
  // first-touch page cost); 0 = no extra cost.
  double first_touch_bytes_per_s = 0;
  // A decode step that follows an idle spell of at least cold_after_s reads the weights cold
  // (the paravirtualised VM: memory read after a few idle seconds costs several times its
  // steady rate, docs/RESULTS.md "First touch"): it pays weight bytes / this rate on top.
  // 0 = no such cost (the GPU presets).
  double cold_read_bytes_per_s = 0;
  double cold_after_s = 0.5;
  // Rate of the on-demand block scoring (Quest upper bounds over the summaries), FLOP/s;
  // 0 = memory-bound on the summary bytes.
  double select_flops = 0;
  // Rate at which a decode step's attention reads K/V, B/s, as its own phase after the layer's
  // weight products (the CPU engine's); 0 = K/V streams with the weights at the decode rate
  // (the GPU presets' roofline).
  double attention_bytes_per_s = 0;
  // Rate at which a selective layer's local attention reads the K/V of the blocks it attends
  // (block by block from the paged cache, a partial result per head for the merge), B/s; the
  // CPU engine's runs slower per byte than its dense sweep. 0 = the dense attention's rate.
  double local_attention_bytes_per_s = 0;
  // Its fixed cost per selective layer (the per-head partial results and block lists), s.
  double local_attention_layer_s = 0;
  // CPU time per KV byte that lands on a decode node while it computes a step: the receive
  // path and, where both nodes share the cores (the testbed), the sender's, which the step's
  // threads lose. 0 = none (the GPU presets: the NIC moves the bytes).
  double transfer_cpu_s_per_byte = 0;
  // How late a bounded wait that runs to its bound ends (the decode thread's wake-up), s.
  double wait_overrun_s = 0;
  // A selective layer-step's own cost beyond scoring and attention (the residency look-ups,
  // block lists and fetch bookkeeping the node does every layer), s.
  double selective_layer_s = 0;
  // How much longer a request's first selective step scores than a later one, as a share of
  // the scoring (the first pass over summaries and score buffers that were just written; the
  // CPU VM's first touch). 0 = none (the GPU presets).
  double first_select_extra = 0;
  std::string source;

  double prefill_flops() const { return peak_flops * compute_eff; }
  double prefill_attention_flops() const {
    return peak_flops * (attention_compute_eff > 0 ? attention_compute_eff : compute_eff);
  }
  // A node of `gpus` such devices running the model tensor-parallel: peak rates and memory
  // scale with the count (the all-reduces are not modelled: an upper bound on the speed-up).
  Hardware Scaled(int gpus) const;
  double decode_bytes_per_s() const { return mem_bytes_per_s * mem_eff; }
  std::string ToString() const;
};

// "l20", "a10", "a100-80g", "h100", "h200", "cpu". kNotFound lists the names.
Result<Hardware> HardwareByName(std::string_view name);
std::span<const std::string_view> HardwareNames();

// The CPU preset with its effective rates taken from `smartgen bench engine --json` records
// (one JSON object per line: prefill_gflops, decode_gbs): the mean prefill GFLOP/s becomes
// the effective compute rate and the mean decode GB/s the effective bandwidth.
Result<Hardware> CalibrateCpu(const std::string& bench_engine_jsonl);

}  // namespace smartgen::sim
