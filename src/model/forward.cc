#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/attention.h"
#include "kernels/elementwise.h"
#include "kernels/fp16.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"
#include "kernels/rope.h"

namespace smartgen::model {
namespace {

// Query tokens per prefill attention work item: small enough to balance the causal triangle
// across threads, large enough to amortise the block list walk.
constexpr std::int64_t kAttentionTile = 32;
// Tokens per parallel range of the per-token passes (norms, RoPE, KV store): one token is well
// under a microsecond of work, so fewer tokens are not worth a pool round trip.
constexpr std::int64_t kTokenGrain = 8;
// Dense attention over fewer (query token x key position x KV head) rows than this runs on the
// calling thread: a short decode step is cheaper than a pool round trip.
constexpr std::int64_t kInlineAttentionRows = 2048;
// Query heads per KV head this file's decode path has room for (the lse it discards).
constexpr int kMaxGroup = 64;

// out[t] = RmsNorm(x[t]) for the n rows of the batch.
void NormRows(const ModelConfig& c, core::ThreadPool* pool, const float* x, const float* weight,
              std::int64_t n, float* out) {
  pool->ParallelFor(
      n,
      [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t t = b; t < e; ++t) {
          kernels::RmsNorm(x + t * c.n_embd, weight, c.n_embd, c.rms_eps, out + t * c.n_embd);
        }
      },
      kTokenGrain);
}

// Writes one token's K and V rows ([n_kv_heads][head_dim] each) at `pos` of `layer`.
void StoreKvRow(const ModelConfig& c, kv::SequenceKv& seq, int layer, std::int64_t pos,
                const float* k, const float* v) {
  const bool f16 = seq.geometry().dtype == kv::KvDType::kF16;
  for (int hd = 0; hd < c.n_kv_heads; ++hd) {
    const float* kh = k + hd * c.head_dim;
    const float* vh = v + hd * c.head_dim;
    std::byte* kd = seq.KRow(layer, hd, pos);
    std::byte* vd = seq.VRow(layer, hd, pos);
    if (f16) {
      auto* k16 = reinterpret_cast<kernels::f16_t*>(kd);
      auto* v16 = reinterpret_cast<kernels::f16_t*>(vd);
      for (int d = 0; d < c.head_dim; ++d) {
        k16[d] = kernels::F32ToF16(kh[d]);
        v16[d] = kernels::F32ToF16(vh[d]);
      }
    } else {
      std::memcpy(kd, kh, sizeof(float) * c.head_dim);
      std::memcpy(vd, vh, sizeof(float) * c.head_dim);
    }
  }
}

}  // namespace

Forward::Forward(const Model& model, core::ThreadPool* pool, ForwardOptions options)
    : model_(model),
      pool_(pool),
      max_context_(options.max_context > 0 ? options.max_context
                                           : model.config().n_ctx_train) {}

kv::KvGeometry Forward::KvGeometryFor(kv::KvDType dtype, int block_tokens) const {
  const ModelConfig& c = model_.config();
  return {c.n_layers, c.n_kv_heads, c.head_dim, block_tokens, dtype};
}

Status Forward::Validate(std::span<ForwardChunk> chunks) const {
  const ModelConfig& c = model_.config();
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const ForwardChunk& ch = chunks[i];
    if (ch.kv == nullptr) return InvalidArgument("chunk {} has no KV cache", i);
    const kv::KvGeometry& g = ch.kv->geometry();
    if (g.n_layers != c.n_layers || g.n_kv_heads != c.n_kv_heads || g.head_dim != c.head_dim) {
      return InvalidArgument("chunk {}: KV geometry ({}) does not match the model", i,
                             g.ToString());
    }
    if (ch.tokens.empty()) return InvalidArgument("chunk {} has no tokens", i);
    if (ch.attention != nullptr && ch.tokens.size() != 1) {
      return InvalidArgument("chunk {}: an attention override needs a single-token chunk", i);
    }
    for (std::int32_t t : ch.tokens) {
      if (t < 0 || t >= c.n_vocab) {
        return InvalidArgument("token id {} is outside the vocabulary [0, {})", t, c.n_vocab);
      }
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (chunks[j].kv == ch.kv) return InvalidArgument("chunks {} and {} share a sequence", j, i);
    }
    const std::int64_t end = ch.kv->n_tokens() + static_cast<std::int64_t>(ch.tokens.size());
    if (end > max_context_) {
      return OutOfRange("sequence would reach {} tokens, past the context length {}", end,
                        max_context_);
    }
  }
  return Status::Ok();
}

void Forward::EnsureScratch(std::int64_t n) {
  if (n <= scratch_tokens_) return;
  const ModelConfig& c = model_.config();
  const auto sz = [n](int dim) { return static_cast<std::size_t>(n) * dim; };
  x_.Resize(sz(c.n_embd));
  h_.Resize(sz(c.n_embd));
  q_.Resize(sz(c.q_dim()));
  k_.Resize(sz(c.kv_dim()));
  v_.Resize(sz(c.kv_dim()));
  att_.Resize(sz(c.q_dim()));
  o_.Resize(sz(c.n_embd));
  gate_.Resize(sz(c.n_ff));
  up_.Resize(sz(c.n_ff));
  scratch_tokens_ = n;
}

Status Forward::RunOne(kv::SequenceKv* kv, std::span<const std::int32_t> tokens,
                       std::vector<float>* logits) {
  ForwardChunk chunk;
  chunk.kv = kv;
  chunk.tokens = tokens;
  chunk.logits = logits;
  ForwardChunk chunks[1] = {chunk};
  if (static_cast<std::int64_t>(tokens.size()) <= kMicroBatchTokens) return Run(chunks);
  SG_RETURN_IF_ERROR(Validate(chunks));
  SG_RETURN_IF_ERROR(kv->Reserve(kv->n_tokens() + static_cast<std::int64_t>(tokens.size())));
  for (std::size_t at = 0; at < tokens.size(); at += kMicroBatchTokens) {
    const std::size_t len = std::min<std::size_t>(kMicroBatchTokens, tokens.size() - at);
    chunks[0].tokens = tokens.subspan(at, len);
    chunks[0].logits = at + len == tokens.size() ? logits : nullptr;
    SG_RETURN_IF_ERROR(Run(chunks));
  }
  return Status::Ok();
}

Status Forward::Run(std::span<ForwardChunk> chunks) {
  SG_RETURN_IF_ERROR(Validate(chunks));
  const ModelConfig& c = model_.config();

  // Reserve KV for every chunk first, so a full pool fails the batch before anything changes.
  for (ForwardChunk& ch : chunks) {
    SG_RETURN_IF_ERROR(
        ch.kv->Reserve(ch.kv->n_tokens() + static_cast<std::int64_t>(ch.tokens.size())));
  }

  std::int64_t n = 0;
  chunk_first_row_.clear();
  chunk_first_pos_.clear();
  row_pos_.clear();
  for (const ForwardChunk& ch : chunks) {
    chunk_first_row_.push_back(n);
    chunk_first_pos_.push_back(ch.kv->n_tokens());
    for (std::size_t i = 0; i < ch.tokens.size(); ++i) {
      row_pos_.push_back(ch.kv->n_tokens() + static_cast<std::int64_t>(i));
    }
    n += static_cast<std::int64_t>(ch.tokens.size());
  }
  EnsureScratch(n);

  // Embeddings.
  const kernels::WeightView& embd = model_.token_embd();
  {
    std::int64_t row = 0;
    for (const ForwardChunk& ch : chunks) {
      for (std::int32_t t : ch.tokens) {
        float* x = x_.data() + row * c.n_embd;
        kernels::DequantizeRow(embd.type, embd.row(t), x, c.n_embd);
        if (c.embd_scale > 0.0f) {
          for (int i = 0; i < c.n_embd; ++i) x[i] *= c.embd_scale;
        }
        ++row;
      }
    }
  }
  // Positions [first, first + n) become valid for attention as each layer stores them.
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    chunks[i].kv->set_n_tokens(chunk_first_pos_[i] + static_cast<std::int64_t>(chunks[i].tokens.size()));
  }

  override_status_ = Status::Ok();
  // Per layer, with n tokens: norm, q/k/v (one pass), bias + q/k-norm + RoPE + KV store (one
  // pass), attention, o projection + residual (one pass), norm, gate/up + SwiGLU (one pass),
  // down projection + residual (one pass). The norms of a single token run inline, so a decode
  // step costs about four pool round trips per layer.
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& w = model_.layer(l);
    NormRows(c, pool_, x_.data(), w.attn_norm.data(), n, h_.data());
    const kernels::MatJob qkv[] = {{&w.wq, h_.data(), q_.data()},
                                   {&w.wk, h_.data(), k_.data()},
                                   {&w.wv, h_.data(), v_.data()}};
    kernels::MatMulMany(qkv, n, pool_);
    StoreKv(chunks, l);  // also adds the q/k/v bias and applies q/k-norm and RoPE
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      if (chunks[i].on_layer_q) {
        chunks[i].on_layer_q(l, q_.data() + chunk_first_row_[i] * c.q_dim(),
                             static_cast<std::int64_t>(chunks[i].tokens.size()));
      }
      if (chunks[i].on_layer_kv) {
        chunks[i].on_layer_kv(l, chunk_first_pos_[i], static_cast<std::int64_t>(chunks[i].tokens.size()));
      }
    }
    Attention(chunks, l);
    if (!override_status_.ok()) {
      // Leave the sequences as they were: the failed batch's positions are not valid.
      for (std::size_t i = 0; i < chunks.size(); ++i) chunks[i].kv->set_n_tokens(chunk_first_pos_[i]);
      return override_status_;
    }
    ProjectIntoResidual(w.wo, att_.data(), w.post_attn_norm, n);
    NormRows(c, pool_, x_.data(), w.ffn_norm.data(), n, h_.data());
    if (c.ffn_act == FfnActivation::kGelu) {
      kernels::MatMulGeGlu(w.w_gate, w.w_up, h_.data(), n, gate_.data(), pool_);
    } else {
      kernels::MatMulSwiGlu(w.w_gate, w.w_up, h_.data(), n, gate_.data(), pool_);
    }
    ProjectIntoResidual(w.w_down, gate_.data(), w.post_ffn_norm, n);
  }
  ComputeLogits(chunks);
  return Status::Ok();
}

void Forward::ProjectIntoResidual(const kernels::WeightView& w, const float* in,
                                  const std::vector<float>& post_norm, std::int64_t n) {
  const ModelConfig& c = model_.config();
  if (post_norm.empty()) {
    const kernels::MatJob job[] = {{&w, in, x_.data(), /*accumulate=*/true}};
    kernels::MatMulMany(job, n, pool_);
    return;
  }
  // Gemma: x += RmsNorm(W in) * post_norm.
  const kernels::MatJob job[] = {{&w, in, o_.data()}};
  kernels::MatMulMany(job, n, pool_);
  NormRows(c, pool_, o_.data(), post_norm.data(), n, o_.data());
  kernels::AddInPlace(x_.data(), o_.data(), n * c.n_embd);
}

void Forward::StoreKv(std::span<ForwardChunk> chunks, int layer) {
  const ModelConfig& c = model_.config();
  const LayerWeights& w = model_.layer(layer);
  const kernels::RopeConfig& rope = c.LayerRope(layer);
  const auto n = static_cast<std::int64_t>(row_pos_.size());
  pool_->ParallelFor(
      n,
      [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t t = b; t < e; ++t) {
          float* q = q_.data() + t * c.q_dim();
          float* k = k_.data() + t * c.kv_dim();
          float* v = v_.data() + t * c.kv_dim();
          if (!w.bq.empty()) kernels::AddInPlace(q, w.bq.data(), c.q_dim());
          if (!w.bk.empty()) kernels::AddInPlace(k, w.bk.data(), c.kv_dim());
          if (!w.bv.empty()) kernels::AddInPlace(v, w.bv.data(), c.kv_dim());
          if (c.has_qk_norm) {
            for (int hd = 0; hd < c.n_heads; ++hd) {
              kernels::RmsNorm(q + hd * c.head_dim, w.q_norm.data(), c.head_dim, c.rms_eps,
                               q + hd * c.head_dim);
            }
            for (int hd = 0; hd < c.n_kv_heads; ++hd) {
              kernels::RmsNorm(k + hd * c.head_dim, w.k_norm.data(), c.head_dim, c.rms_eps,
                               k + hd * c.head_dim);
            }
          }
          kernels::Rope(rope, q, c.n_heads, row_pos_[t]);
          kernels::Rope(rope, k, c.n_kv_heads, row_pos_[t]);
          // The chunk holding batch row t: the last one starting at or before it.
          const auto chunk = std::upper_bound(chunk_first_row_.begin(), chunk_first_row_.end(), t) -
                             chunk_first_row_.begin() - 1;
          StoreKvRow(c, *chunks[chunk].kv, layer, row_pos_[t], k, v);
        }
      },
      kTokenGrain);
}

void Forward::Attention(std::span<ForwardChunk> chunks, int layer) {
  const ModelConfig& c = model_.config();
  const int g = c.n_group();

  // Overridden (decode-node) chunks run one at a time outside the pool: they may wait on the
  // network and may use the pool themselves.
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    if (chunks[i].attention == nullptr) continue;
    const std::int64_t row = chunk_first_row_[i];
    Status s = chunks[i].attention->Attend(layer, q_.data() + row * c.q_dim(),
                                           chunk_first_pos_[i], att_.data() + row * c.q_dim());
    if (!s.ok()) {
      override_status_ = s;
      return;
    }
  }

  // Dense attention for the rest: work items of (chunk, kv head, query tile). The lists are
  // reused across calls on this thread (a decode step makes one per layer).
  struct Item {
    std::int32_t chunk, head;
    std::int64_t t_begin, t_end;
  };
  // (References, so the pool's threads read this thread's lists, not their own.)
  thread_local std::vector<Item> items_storage;
  thread_local std::vector<std::vector<kernels::KvBlockRef>> refs_storage;
  std::vector<Item>& items = items_storage;
  std::vector<std::vector<kernels::KvBlockRef>>& refs = refs_storage;
  items.clear();
  if (refs.size() < chunks.size() * c.n_kv_heads) refs.resize(chunks.size() * c.n_kv_heads);
  std::int64_t work_rows = 0;  // query tokens x key positions x KV heads
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    if (chunks[i].attention != nullptr) continue;
    const std::int64_t n = static_cast<std::int64_t>(chunks[i].tokens.size());
    const std::int64_t window_start = c.LayerKvStart(layer, chunk_first_pos_[i]);
    for (int hd = 0; hd < c.n_kv_heads; ++hd) {
      std::vector<kernels::KvBlockRef>& list = refs[i * c.n_kv_heads + hd];
      list.clear();  // AllRefs appends
      chunks[i].kv->AllRefs(layer, hd, &list);
      if (window_start > 0) {
        // A sliding layer: blocks wholly before the chunk's first window hold no visible key
        // (the kernels mask the rest); positions increase along the list.
        std::size_t keep = 0;
        while (keep < list.size() && list[keep].first_pos + list[keep].n_tokens <= window_start) {
          ++keep;
        }
        list.erase(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(keep));
      }
      for (std::int64_t t = 0; t < n; t += kAttentionTile) {
        const std::int64_t t_end = std::min(n, t + kAttentionTile);
        items.push_back({static_cast<std::int32_t>(i), hd, t, t_end});
        work_rows += (t_end - t) * (chunk_first_pos_[i] + t_end);
      }
    }
  }
  // Longest tiles (latest positions) first, claimed dynamically.
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.t_end > b.t_end; });
  const float* const q_base = q_.data();
  float* const out_base = att_.data();
  auto attend = [&](std::int64_t idx) {
    const Item& it = items[static_cast<std::size_t>(idx)];
    const std::int64_t row = chunk_first_row_[it.chunk] + it.t_begin;
    const kernels::AttentionParams params =
        c.LayerAttention(layer, chunks[it.chunk].kv->geometry().dtype);
    const float* q = q_base + row * c.q_dim() + it.head * g * c.head_dim;
    float* out = out_base + row * c.q_dim() + it.head * g * c.head_dim;
    const auto& blocks = refs[it.chunk * c.n_kv_heads + it.head];
    const std::int64_t pos = chunk_first_pos_[it.chunk] + it.t_begin;
    if (it.t_end - it.t_begin == 1 && g <= kMaxGroup) {
      // One query token (a decode step): the decode kernel, which needs no query tile.
      float lse[kMaxGroup];
      kernels::AttendBlocks(params, q, pos, blocks, out, lse);
    } else {
      kernels::AttendCausal(params, q, c.q_dim(), it.t_end - it.t_begin, pos, blocks, out,
                            c.q_dim(), nullptr);
    }
  };
  const auto n_items = static_cast<std::int64_t>(items.size());
  if (work_rows < kInlineAttentionRows) {
    for (std::int64_t i = 0; i < n_items; ++i) attend(i);
  } else {
    pool_->ForEachChunk(n_items, attend);
  }
}

void Forward::ComputeLogits(std::span<ForwardChunk> chunks) {
  const ModelConfig& c = model_.config();
  // Gather the rows that need logits, normalise them, then one matmul.
  std::vector<std::int64_t> rows;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    if (chunks[i].logits == nullptr) continue;
    const std::int64_t n = static_cast<std::int64_t>(chunks[i].tokens.size());
    for (std::int64_t t = chunks[i].all_logits ? 0 : n - 1; t < n; ++t) {
      rows.push_back(chunk_first_row_[i] + t);
    }
  }
  if (rows.empty()) return;
  const std::int64_t r = static_cast<std::int64_t>(rows.size());
  EnsureScratch(r);
  for (std::int64_t j = 0; j < r; ++j) {
    kernels::RmsNorm(x_.data() + rows[j] * c.n_embd, model_.output_norm().data(), c.n_embd,
                     c.rms_eps, h_.data() + j * c.n_embd);
  }
  // One chunk wanting logits (a decode step, a prompt): the product goes straight into its
  // vector; otherwise into one buffer that is then handed out.
  ForwardChunk* only = nullptr;
  int with_logits = 0;
  for (ForwardChunk& ch : chunks) {
    if (ch.logits != nullptr) ++with_logits, only = &ch;
  }
  // Gemma 2's final soft-capping, as ggml computes it: c * tanh(x * (1 / c)).
  auto softcap = [&](float* logits) {
    if (c.final_softcap <= 0.0f) return;
    const float inv = 1.0f / c.final_softcap;
    for (std::int64_t i = 0; i < r * c.n_vocab; ++i) {
      logits[i] = c.final_softcap * std::tanh(logits[i] * inv);
    }
  };
  if (with_logits == 1) {
    only->logits->resize(static_cast<std::size_t>(r) * c.n_vocab);
    kernels::MatMul(model_.output(), h_.data(), r, only->logits->data(), pool_);
    softcap(only->logits->data());
    return;
  }
  std::vector<float> all(static_cast<std::size_t>(r) * c.n_vocab);
  kernels::MatMul(model_.output(), h_.data(), r, all.data(), pool_);
  softcap(all.data());
  std::size_t offset = 0;
  for (ForwardChunk& ch : chunks) {
    if (ch.logits == nullptr) continue;
    const std::size_t count = (ch.all_logits ? ch.tokens.size() : 1) * c.n_vocab;
    ch.logits->assign(all.begin() + offset, all.begin() + offset + count);
    offset += count;
  }
}

}  // namespace smartgen::model
