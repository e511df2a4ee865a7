// Forward's team step: a decode step of one sequence whose layers run as one pool job.
//
// Pass by pass (forward.cc), a decode step is about four pool jobs per layer, and between two of
// them the caller alone normalises, quantises, applies RoPE, stores the new K/V row and attends
// while the other threads spin: on SmolLM2-135M Q8_0 with two threads the worker sat idle for a
// fifth of the step (perf, docs/RESULTS.md). Here every thread of one job walks the layers
// itself: each stage is shared through a core::TeamStage (kernels::TeamPass for the matrix
// passes, whose lanes core::LaneShares sizes from the threads' waits in the steps before: a
// thread on a vCPU the host runs less gets less), a thread normalises and quantises its own copy
// of a pass's input, the attention is split by KV head, and a thread that is done with a stage
// prefetches the next pass's weights while the others finish theirs. Every value is computed by the
// same kernels on the same inputs as pass by pass, so the logits are the same bit for bit
// (forward_team_test).
#include <algorithm>
#include <array>
#include <vector>

#include "kernels/attention.h"
#include "kernels/elementwise.h"
#include "kernels/rope.h"
#include "model/forward.h"

namespace smartgen::model {
bool Forward::TeamStepApplies(std::span<const ForwardChunk> chunks) const {
  const ModelConfig& c = model_.config();
  if (!team_decode_ || pool_ == nullptr || pool_->size() < 2 || chunks.size() != 1) return false;
  const ForwardChunk& ch = chunks[0];
  if (ch.tokens.size() != 1 || ch.attention != nullptr || ch.on_layer_q || ch.on_layer_kv ||
      ch.all_logits || c.n_group() > kMaxDecodeGroup) {
    return false;
  }
  for (int l = 0; l < c.n_layers; ++l) {
    // Gemma's post-norms need the whole projection before the residual: pass by pass.
    const LayerWeights& w = model_.layer(l);
    if (!w.post_attn_norm.empty() || !w.post_ffn_norm.empty()) return false;
  }
  return true;
}

void Forward::TeamAttendHead(const ForwardChunk& chunk, int layer, int head, std::int64_t pos) {
  const ModelConfig& c = model_.config();
  const LayerWeights& w = model_.layer(layer);
  const kernels::RopeConfig& rope = c.LayerRope(layer);
  const int g = c.n_group(), hd = c.head_dim;
  // Its query heads [head g, head g + g), as PrepareRows treats the whole row.
  float* q = q_.data() + head * g * hd;
  if (!w.bq.empty()) kernels::AddInPlace(q, w.bq.data() + head * g * hd, g * hd);
  if (c.has_qk_norm) {
    for (int i = 0; i < g; ++i) kernels::RmsNorm(q + i * hd, w.q_norm.data(), hd, c.rms_eps, q + i * hd);
  }
  kernels::Rope(rope, q, g, pos);
  float* k = k_.data() + head * hd;
  float* v = v_.data() + head * hd;
  if (!w.bk.empty()) kernels::AddInPlace(k, w.bk.data() + head * hd, hd);
  if (!w.bv.empty()) kernels::AddInPlace(v, w.bv.data() + head * hd, hd);
  if (c.has_qk_norm) kernels::RmsNorm(k, w.k_norm.data(), hd, c.rms_eps, k);
  kernels::Rope(rope, k, 1, pos);
  kv::SequenceKv& seq = *chunk.kv;
  seq.StoreRow(layer, head, pos, k, v);
  thread_local std::vector<kernels::KvBlockRef> blocks;
  LayerBlocks(chunk, layer, head, pos, &blocks);
  float lse[kMaxDecodeGroup];
  kernels::AttendBlocks(c.LayerAttention(layer, seq.geometry().dtype), q, pos, blocks,
                        att_.data() + head * g * hd, lse);
}

void Forward::RunTeamLayers(const ForwardChunk& chunk) {
  const ModelConfig& c = model_.config();
  const int lanes = pool_->size();
  if (team_layers_ != c.n_layers) {
    team_passes_ = std::make_unique<kernels::TeamPass[]>(static_cast<std::size_t>(c.n_layers) * 4);
    team_attention_ = std::make_unique<core::TeamStage[]>(static_cast<std::size_t>(c.n_layers));
    team_layers_ = c.n_layers;
  }
  if (team_up_.size() < static_cast<std::size_t>(c.n_ff)) team_up_.Resize(static_cast<std::size_t>(c.n_ff));
  if (team_shares_.lanes() != lanes) team_shares_.Reset(lanes);
  float* const x = x_.data();  // the step's one residual row
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& w = model_.layer(l);
    kernels::TeamPass* p = &team_passes_[static_cast<std::size_t>(l) * 4];
    const kernels::MatJob qkv[] = {{&w.wk, nullptr, k_.data()},
                                   {&w.wv, nullptr, v_.data()},
                                   {&w.wq, nullptr, q_.data()}};
    p[0].Reset(qkv, lanes, &team_shares_);
    team_attention_[l].Reset(c.n_kv_heads, lanes);
    const kernels::MatJob o[] = {{&w.wo, nullptr, x, /*accumulate=*/true}};
    p[1].Reset(o, lanes, &team_shares_);
    // gate and up as two plain products, not one gated product: a thread's lane is then one
    // matrix read front to back, not the same rows of both in turn (bench_kernels'
    // BM_DecodeTeamPassesLayout, docs/RESULTS.md); each thread applies the activation to its own
    // copy of the two for the down pass.
    const kernels::MatJob gate_up[] = {{&w.w_gate, nullptr, gate_.data()},
                                       {&w.w_up, nullptr, team_up_.data()}};
    p[2].Reset(gate_up, lanes, &team_shares_);
    const kernels::MatJob down[] = {{&w.w_down, nullptr, x, /*accumulate=*/true}};
    p[3].Reset(down, lanes, &team_shares_);
  }
  const std::int64_t pos = chunk_first_pos_[0];
  const auto norm = [&](const float* in, const std::vector<float>& weight, float* out) -> const float* {
    kernels::RmsNorm(in, weight.data(), c.n_embd, c.rms_eps, out);
    return out;
  };
  // Each thread's time in the stages' waits, for team_shares_.
  struct alignas(64) Waited {
    core::Nanos ns = 0;
  };
  std::array<Waited, core::LaneShares::kMaxLanes> waited{};
  const core::Nanos step_start = core::NowNanos();
  pool_->Run([&](int, int) {
    // The KV heads this thread attends first: its lane of each layer's attention stage, split as
    // core::LaneClaims splits it (a wrong guess only wastes the prefetch below).
    const int lane = core::ThreadPool::CurrentLane();
    const auto [own_head, own_head_end] =
        lane >= 0 ? core::ThreadPool::SplitRange(c.n_kv_heads, lane % lanes, lanes)
                  : std::pair<std::int64_t, std::int64_t>{0, 0};
    // This thread's normalised copy of the residual, the input of q/k/v and of gate/up; aligned
    // as Forward's own scratch (an F32 GEMV loads a vector of it per weight vector: from a
    // 16-byte aligned std::vector, Qwen2.5-0.5B F32 decoded at 0.89-0.97 of pass by pass).
    thread_local core::AlignedBuffer<float> h, ffn_in;
    if (h.size() < static_cast<std::size_t>(c.n_embd)) h.Resize(static_cast<std::size_t>(c.n_embd));
    if (ffn_in.size() < static_cast<std::size_t>(c.n_ff))
      ffn_in.Resize(static_cast<std::size_t>(c.n_ff));
    // The down pass's input, act(gate) * up, this thread's copy.
    const auto gated = [&]() -> const float* {
      if (c.ffn_act == FfnActivation::kGelu) {
        kernels::GeGlu(gate_.data(), team_up_.data(), c.n_ff, ffn_in.data());
      } else {
        kernels::SwiGlu(gate_.data(), team_up_.data(), c.n_ff, ffn_in.data());
      }
      return ffn_in.data();
    };
    core::Nanos& my_wait =
        waited[static_cast<std::size_t>(std::clamp(lane, 0, core::LaneShares::kMaxLanes - 1))].ns;
    const auto wait = [&my_wait](const auto& stage, const auto& how) {
      if (stage.Done()) return;
      const core::Nanos start = core::NowNanos();
      how();
      my_wait += core::NowNanos() - start;
    };
    for (int l = 0; l < c.n_layers; ++l) {
      const LayerWeights& w = model_.layer(l);
      kernels::TeamPass* p = &team_passes_[static_cast<std::size_t>(l) * 4];
      core::TeamStage& attention = team_attention_[l];
      // The norms read x only once this thread holds a chunk of the pass, so nobody can be past
      // the pass and writing x (kernels::TeamPass::Work).
      p[0].Work([&] { return norm(x, w.attn_norm, h.data()); });
      // Its heads' K/V rows come into cache while the others finish the pass (the weights read
      // since the last step evicted them): in a SmolLM2-135M Q8_0 decode a head's attention took
      // 4.1 k TSC cycles against 5.2 k without; issued at the layer's start instead, the prefetches
      // slowed the thread's q/k/v chunks by as much (docs/RESULTS.md, issue 14).
      for (std::int64_t head = own_head; head < own_head_end; ++head) {
        chunk.kv->Prefetch(l, static_cast<int>(head), c.LayerKvStart(l, pos),
                           kAttentionPrefetchBytes);
      }
      wait(p[0], [&] { p[0].Wait({{&w.wo}}); });
      for (std::int64_t head = attention.Next(); head >= 0; head = attention.Next()) {
        TeamAttendHead(chunk, l, static_cast<int>(head), pos);
        attention.Finish();
      }
      wait(attention, [&] { attention.Wait(nullptr); });
      p[1].Work([&] { return att_.data(); });
      wait(p[1], [&] { p[1].Wait({{&w.w_gate, &w.w_up}}); });
      p[2].Work([&] { return norm(x, w.ffn_norm, h.data()); });
      wait(p[2], [&] { p[2].Wait({{&w.w_down}}); });
      p[3].Work(gated);
      wait(p[3], [&] { p[3].Wait(NextLayerQkv(l + 1)); });
    }
  });
  std::array<core::Nanos, core::LaneShares::kMaxLanes> wait_ns{};
  const int timed = std::min(lanes, core::LaneShares::kMaxLanes);
  for (int i = 0; i < timed; ++i)
    wait_ns[static_cast<std::size_t>(i)] = waited[static_cast<std::size_t>(i)].ns;
  team_shares_.Learn(std::span<const core::Nanos>(wait_ns.data(), static_cast<std::size_t>(timed)),
                     core::NowNanos() - step_start);
}

}  // namespace smartgen::model
