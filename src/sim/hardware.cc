#include "sim/hardware.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace smartgen::sim {
namespace {

// Efficiency factors of the GPU presets.
// Ampere and Ada (A10, A100, L20): assumptions, not measured: prefill of 8-14B models reaches
// about half of the dense tensor peak (vLLM/SGLang with FlashAttention report MFU of 0.4-0.6
// on long prompts) and a decode step about 0.75 of the memory bandwidth.
constexpr double kGpuComputeEff = 0.5;
constexpr double kGpuMemEff = 0.75;
constexpr double kGpuLayerOverhead = 15e-6;  // a few kernel launches per layer
// Hopper (H100, H200: one GH100 chip), measured on an H200 (bench/gpu_presets.py, torch 2.11
// + CUDA 13.0, 2026-12-04; docs/RESULTS.md "GPU preset figures measured on an H200"): the
// linear layers of Llama-3.1-8B and Qwen3-14B as bf16 GEMMs at 2K-32K tokens ran at 651-763
// TFLOP/s (0.66-0.77 of 989), causal attention through cuDNN's SDPA at 590-632 TFLOP/s from
// 16K tokens (0.60-0.64; 0.43 at 4K; FlashAttention 2: 0.34), and one decode step's weight
// products replayed from a CUDA graph at 3516-3745 GB/s (0.73-0.78 of 4.8 TB/s; a 4 GiB
// device copy: 4218-4260). Attention over a subset of 16-token blocks (a split-K paged kernel
// over a block table, then a log-sum-exp merge) took 30-33 us + bytes / 4.4 TB/s per layer,
// dense attention 23 us + bytes / 4.4 TB/s: about 10 us more per selective layer.
constexpr double kHopperComputeEff = 0.70;
constexpr double kHopperAttentionEff = 0.60;
constexpr double kHopperMemEff = 0.76;
constexpr double kHopperSelectiveLayer = 10e-6;

Hardware Hopper(Hardware h) {
  h.compute_eff = kHopperComputeEff;
  h.attention_compute_eff = kHopperAttentionEff;
  h.mem_eff = kHopperMemEff;
  h.selective_layer_s = kHopperSelectiveLayer;
  h.source += "; efficiency measured on an H200 (bench/gpu_presets.py)";
  return h;
}

Hardware Gpu(std::string name, double tflops, double gbs, double mem_gb, std::string source) {
  Hardware h;
  h.name = std::move(name);
  h.peak_flops = tflops * 1e12;
  h.mem_bytes_per_s = gbs * 1e9;
  h.compute_eff = kGpuComputeEff;
  h.mem_eff = kGpuMemEff;
  h.memory_bytes = mem_gb * 1e9;
  h.layer_overhead_s = kGpuLayerOverhead;
  h.source = std::move(source);
  return h;
}

// The development machine (docs/RESULTS.md, "Engine performance" and "TTST by transfer mode"):
// GEMM peak 293 GFLOP/s and read bandwidth 44.8 GB/s (bench_kernels, 2 threads); in the TTST
// sweep's deployment (three processes on 2 cores) prefill ran at 234 GFLOP/s (0.80 of the
// peak: 2048 and 4096 tokens alike) and a decode step streamed weights + KV at 30.7 GB/s
// (0.69); the first step after a prompt's KV was written pays about 26 GB/s over it (colocated
// TTST - TBT in the quiet 2026-12-01 18:46 sweep: 1.9 ms at 47 MB, 3.5 ms at 94 MB; it was 3 GB/s,
// 17 and 31 ms, before the engine's prefill ran in 512-token micro-batches and its decode
// attention prefetched). A selective layer-step as the node's step phases (selective_ms)
// measured it (2026-12-01 20:42 UTC, 4096 tokens, R 1 and 4): selection 0.07-0.09 ms (7.4
// GFLOP/s on the Quest bound), attention over what is present at 11.3 GB/s of K/V (64-68 ns
// per key and layer; the colocated steps' growth with the context gives the same), 0.08 ms of
// its own beyond both; on the paravirtualised Zen 5 VM (2026-12-05 00:20 sweep, "Validation
// with SmartGen's local attention at its own rate") that attention read the present blocks at
// 13.0 GB/s + 17 us a layer (the line through the requests' steps 2 on, 11.9 GB/s pooled at R =
// 1, 9.3 at R = 2: the fixed part weighs more where fewer blocks are present), and a wait that
// runs to its bound ends 0.045 ms after it (0.08 ms before the decode thread's timer slack was
// lowered to 1 us). On the paravirtualised Zen 5 VM
// (2026-12-04 sweep, "Validation with a cold first step") a decode node that sat idle waiting
// for its KV took 1-6 ms longer over its first step than over its later ones: 81 GB/s over
// SmolLM2-135M F16's weights, beyond a first touch of 52 GB/s over the KV (26 GB/s kept here:
// the older sweeps', and the VM's figure before the RoPE table stopped growing mid-step).
// The testbed's KV link is shaped TCP over loopback, both nodes on the same 2 cores: moving a
// byte through it costs 8 ms of CPU per MB, sender and receiver together (`/usr/bin/time
// smartgen bench transfer --link-gbps 0.1512 --bytes 32M --block-bytes 12K` on the
// paravirtualised Zen 5 VM, 2026-12-04: 0.27 s of CPU for 34.6 MB; 2.3 ms per MB unshaped),
// measured apart from any decode; a step's threads lose it while the stream lands (a sweep
// whose records list the local attention's blocks fits it with the selective layer's own cost:
// 5.6 ms per MB and 53 us in the 2026-12-05 00:20 one). A request's
// first selective step scored about twice as long as its later ones (2-6.6 ms against 1-2.2 ms
// a step; the median request's extra read 0.8-1.2 on the four 2026-12-04 sweeps that timed
// the steps' phases).
constexpr double kTestbedTransferCpuPerByte = 8e-3 / 1e6;

Hardware Cpu() {
  Hardware h;
  h.name = "cpu";
  h.peak_flops = 293e9;
  h.mem_bytes_per_s = 44.8e9;
  h.compute_eff = 0.80;
  h.mem_eff = 0.69;
  h.memory_bytes = 24e9;
  h.layer_overhead_s = 0;
  h.first_touch_bytes_per_s = 26e9;
  h.cold_read_bytes_per_s = 81e9;
  h.select_flops = 7.4e9;
  h.attention_bytes_per_s = 11.3e9;
  h.local_attention_bytes_per_s = 13.0e9;
  h.local_attention_layer_s = 17e-6;
  h.wait_overrun_s = 0.045e-3;
  h.selective_layer_s = 0.08e-3;
  h.first_select_extra = 1.1;
  h.transfer_cpu_s_per_byte = kTestbedTransferCpuPerByte;
  h.source = "2-core development machine, docs/RESULTS.md (engine performance, TTST sweep)";
  return h;
}

constexpr std::string_view kHardwareNames[] = {"l20", "a10", "a100-80g", "h100", "h200", "cpu"};

}  // namespace

std::string Hardware::ToString() const {
  const std::string attention =
      attention_compute_eff > 0 ? fmt::format(" (attention x {:.2f})", attention_compute_eff) : "";
  return fmt::format("{}: {:.1f} TFLOP/s x {:.2f}{}, {:.0f} GB/s x {:.2f}, {:.0f} GB ({})", name,
                     peak_flops / 1e12, compute_eff, attention, mem_bytes_per_s / 1e9, mem_eff,
                     memory_bytes / 1e9, source);
}

std::span<const std::string_view> HardwareNames() { return kHardwareNames; }

Hardware Hardware::Scaled(int gpus) const {
  if (gpus <= 1) return *this;
  Hardware h = *this;
  h.peak_flops *= gpus;
  h.mem_bytes_per_s *= gpus;
  h.memory_bytes *= gpus;
  h.select_flops *= gpus;
  h.name = fmt::format("{}x{}", gpus, name);
  return h;
}

Result<Hardware> HardwareByName(std::string_view name) {
  // Dense (no sparsity) FP16/BF16 tensor-core peaks and memory bandwidth from NVIDIA's
  // datasheets.
  if (name == "l20") {
    return Gpu("l20", 119.5, 864, 48, "NVIDIA L20 datasheet: FP16 tensor 119.5 TFLOPS dense, "
               "48 GB GDDR6 864 GB/s");
  }
  if (name == "a10") {
    return Gpu("a10", 125, 600, 24, "NVIDIA A10 datasheet: FP16 tensor 125 TFLOPS dense, "
               "24 GB GDDR6 600 GB/s");
  }
  if (name == "a100-80g") {
    return Gpu("a100-80g", 312, 2039, 80, "NVIDIA A100 80GB SXM datasheet: BF16 tensor 312 "
               "TFLOPS dense, HBM2e 2039 GB/s");
  }
  if (name == "h100") {
    return Hopper(Gpu("h100", 989, 3350, 80, "NVIDIA H100 SXM datasheet: BF16 tensor 989 TFLOPS "
                      "dense, HBM3 3.35 TB/s"));
  }
  if (name == "h200") {
    return Hopper(Gpu("h200", 989, 4800, 141, "NVIDIA H200 SXM datasheet: BF16 tensor 989 TFLOPS "
                      "dense, 141 GB HBM3e 4.8 TB/s"));
  }
  if (name == "cpu") return Cpu();
  return NotFound("no hardware preset '{}'; known: l20 a10 a100-80g h100 h200 cpu", name);
}

Result<Hardware> CalibrateCpu(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open {}", path);
  double gflops = 0, gbs = 0;
  int n_pf = 0, n_dec = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return InvalidArgument("{}: not a JSON line", path);
    if (j.contains("prefill_gflops") && j["prefill_gflops"].is_number()) {
      gflops += j["prefill_gflops"].get<double>();
      ++n_pf;
    }
    if (j.contains("decode_gbs") && j["decode_gbs"].is_number()) {
      gbs += j["decode_gbs"].get<double>();
      ++n_dec;
    }
  }
  if (n_pf == 0 || n_dec == 0) {
    return InvalidArgument("{}: no prefill_gflops/decode_gbs records (smartgen bench engine "
                           "--json output expected)", path);
  }
  Hardware h = Cpu();
  h.peak_flops = gflops / n_pf * 1e9;
  h.compute_eff = 1;
  h.mem_bytes_per_s = gbs / n_dec * 1e9;
  h.mem_eff = 1;
  h.source = fmt::format("cpu calibrated from {} ({} records)", path, n_pf);
  return h;
}

}  // namespace smartgen::sim
