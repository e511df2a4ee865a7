#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/elementwise.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"
#include "kernels/rope.h"

namespace smartgen::model {
namespace {

// Tokens per parallel range of the per-token passes (norms, RoPE, KV store): one token is well
// under a microsecond of work, so fewer tokens are not worth a pool round trip.
constexpr std::int64_t kTokenGrain = 8;

// The batch logits buffer is kept between calls up to this size: 64 sequences of a 262144-token
// vocabulary (Gemma 3) take 64 MiB.
constexpr std::size_t kKeepLogitsBytes = std::size_t{128} << 20;

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

}  // namespace

Forward::Forward(const Model& model, core::ThreadPool* pool, ForwardOptions options)
    : model_(model),
      pool_(pool),
      max_context_(options.max_context > 0 ? options.max_context : model.config().n_ctx_train),
      micro_batch_(options.micro_batch_tokens > 0 ? options.micro_batch_tokens
                                                  : kMicroBatchTokens),
      team_decode_(options.team_decode) {}

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

void Forward::EnsureScratch(std::int64_t residual_rows, std::int64_t scratch_rows) {
  const ModelConfig& c = model_.config();
  if (residual_rows > residual_tokens_) {
    x_.Resize(static_cast<std::size_t>(residual_rows) * c.n_embd);
    residual_tokens_ = residual_rows;
  }
  if (scratch_rows <= scratch_tokens_) return;
  const auto sz = [scratch_rows](int dim) { return static_cast<std::size_t>(scratch_rows) * dim; };
  h_.Resize(sz(c.n_embd));
  q_.Resize(sz(c.q_dim()));
  k_.Resize(sz(c.kv_dim()));
  v_.Resize(sz(c.kv_dim()));
  att_.Resize(sz(c.q_dim()));
  o_.Resize(sz(c.n_embd));
  gate_.Resize(sz(c.n_ff));
  scratch_tokens_ = scratch_rows;
}

Status Forward::RunOne(kv::SequenceKv* kv, std::span<const std::int32_t> tokens,
                       std::vector<float>* logits) {
  ForwardChunk chunk;
  chunk.kv = kv;
  chunk.tokens = tokens;
  chunk.logits = logits;
  ForwardChunk chunks[1] = {chunk};
  if (static_cast<std::int64_t>(tokens.size()) <= micro_batch_) return Run(chunks);
  SG_RETURN_IF_ERROR(Validate(chunks));
  SG_RETURN_IF_ERROR(kv->Reserve(kv->n_tokens() + static_cast<std::int64_t>(tokens.size())));
  const auto step = static_cast<std::size_t>(micro_batch_);
  for (std::size_t at = 0; at < tokens.size(); at += step) {
    const std::size_t len = std::min(step, tokens.size() - at);
    chunks[0].tokens = tokens.subspan(at, len);
    chunks[0].logits = at + len == tokens.size() ? logits : nullptr;
    SG_RETURN_IF_ERROR(Run(chunks));
  }
  return Status::Ok();
}

void Forward::PlanQueryTails(std::span<ForwardChunk> chunks, Rows last) {
  tails_.assign(chunks.size(), {});
  std::int64_t buffered = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    if (!chunks[i].on_layer_q) continue;
    const auto n = static_cast<std::int64_t>(chunks[i].tokens.size());
    const std::int64_t rows = chunks[i].query_rows > 0 ? std::min(chunks[i].query_rows, n) : n;
    QueryTail& t = tails_[i];
    t.first = chunk_first_row_[i] + n - rows;
    t.n = rows;
    if (t.first < last.begin) {
      t.offset = buffered;
      buffered += rows;
    }
  }
  const std::size_t need = static_cast<std::size_t>(buffered) * model_.config().q_dim();
  if (q_tail_.size() < need) q_tail_.resize(need);
}

Status Forward::Run(std::span<ForwardChunk> chunks) {
  SG_RETURN_IF_ERROR(Validate(chunks));
  if (chunks.empty()) return Status::Ok();
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
  // Micro-batches counted from the end, so the last is full and holds the last queries of a
  // long prompt (what on_layer_q reads), and only the first may be short.
  micro_batches_.clear();
  for (std::int64_t end = n; end > 0; end -= micro_batch_) {
    const std::int64_t begin = std::max<std::int64_t>(0, end - micro_batch_);
    micro_batches_.push_back({begin, end - begin});
  }
  std::reverse(micro_batches_.begin(), micro_batches_.end());
  const Rows last = micro_batches_.back();
  EnsureScratch(n, std::min(n, micro_batch_));
  PlanQueryTails(chunks, last);

  // Embeddings.
  const kernels::WeightView& embd = model_.token_embd();
  {
    std::int64_t row = 0;
    std::vector<std::byte> file_row;  // a regrouped row in the file's layout (a tied Q8_0 head)
    for (const ForwardChunk& ch : chunks) {
      for (std::int32_t t : ch.tokens) {
        float* x = x_.data() + row * c.n_embd;
        kernels::DequantizeViewRow(embd, t, x, &file_row);
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

  if (TeamStepApplies(chunks)) {
    RunTeamLayers(chunks[0]);
    ComputeLogits(chunks);
    return Status::Ok();
  }
  override_status_ = Status::Ok();
  // Per layer: for each micro-batch, norm, k/v (and q) projections (one pass), bias + q/k-norm
  // + RoPE + KV store (one pass); the hooks; then for each micro-batch, the last one first,
  // (norm, q projection, bias + q-norm + RoPE for the others,) attention, o projection +
  // residual (one pass), norm, gate/up + SwiGLU (one pass), down projection + residual (one
  // pass). The norms of a single token run inline, so a decode step (one micro-batch) costs
  // about four pool round trips per layer; a decode step of one sequence without hooks or an
  // attention override takes the team path instead (forward_team.cc), one pool job in all.
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& w = model_.layer(l);
    for (const Rows& mb : micro_batches_) {
      const bool is_last = mb.begin == last.begin;
      // Queries now: the last micro-batch's (it attends first), and any that hooks read.
      bool queries = is_last;
      for (const QueryTail& t : tails_) {
        queries =
            queries || (t.offset >= 0 && t.first < mb.begin + mb.n && t.first + t.n > mb.begin);
      }
      NormRows(c, pool_, x_.data() + mb.begin * c.n_embd, w.attn_norm.data(), mb.n, h_.data());
      const kernels::MatJob qkv[] = {{&w.wk, h_.data(), k_.data()},
                                     {&w.wv, h_.data(), v_.data()},
                                     {&w.wq, h_.data(), q_.data()}};
      kernels::MatMulMany(std::span(qkv).first(queries ? 3 : 2), mb.n, pool_, {{&w.wo}});
      PrepareRows(chunks, l, mb, queries, /*kv=*/true);
      for (const QueryTail& t : tails_) {
        if (t.offset < 0 || !queries) continue;
        const std::int64_t b = std::max(t.first, mb.begin);
        const std::int64_t e = std::min(t.first + t.n, mb.begin + mb.n);
        if (b >= e) continue;
        std::memcpy(q_tail_.data() + (t.offset + b - t.first) * c.q_dim(),
                    q_.data() + (b - mb.begin) * c.q_dim(), sizeof(float) * (e - b) * c.q_dim());
      }
    }
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      if (chunks[i].on_layer_q) {
        const QueryTail& t = tails_[i];
        const float* q = t.offset >= 0 ? q_tail_.data() + t.offset * c.q_dim()
                                       : q_.data() + (t.first - last.begin) * c.q_dim();
        chunks[i].on_layer_q(l, q, t.n);
      }
      if (chunks[i].on_layer_kv) {
        chunks[i].on_layer_kv(l, chunk_first_pos_[i], static_cast<std::int64_t>(chunks[i].tokens.size()));
      }
    }
    // The last micro-batch first: its queries are in q_.
    FinishLayer(chunks, l, last);
    for (std::size_t j = 0; j + 1 < micro_batches_.size() && override_status_.ok(); ++j) {
      const Rows& mb = micro_batches_[j];
      NormRows(c, pool_, x_.data() + mb.begin * c.n_embd, w.attn_norm.data(), mb.n, h_.data());
      kernels::MatMul(w.wq, h_.data(), mb.n, q_.data(), pool_);
      PrepareRows(chunks, l, mb, /*queries=*/true, /*kv=*/false);
      FinishLayer(chunks, l, mb);
    }
    if (!override_status_.ok()) {
      // Leave the sequences as they were: the failed batch's positions are not valid.
      for (std::size_t i = 0; i < chunks.size(); ++i) chunks[i].kv->set_n_tokens(chunk_first_pos_[i]);
      return override_status_;
    }
  }
  ComputeLogits(chunks);
  return Status::Ok();
}

void Forward::FinishLayer(std::span<ForwardChunk> chunks, int layer, Rows rows) {
  const ModelConfig& c = model_.config();
  const LayerWeights& w = model_.layer(layer);
  Attention(chunks, layer, rows);
  if (!override_status_.ok()) return;
  // Each pass names the one after it, whose start its idle threads prefetch (kernels::NextPass).
  ProjectIntoResidual(w.wo, att_.data(), w.post_attn_norm, rows, {{&w.w_gate}, &w.w_up});
  NormRows(c, pool_, x_.data() + rows.begin * c.n_embd, w.ffn_norm.data(), rows.n, h_.data());
  if (c.ffn_act == FfnActivation::kGelu) {
    kernels::MatMulGeGlu(w.w_gate, w.w_up, h_.data(), rows.n, gate_.data(), pool_, {{&w.w_down}});
  } else {
    kernels::MatMulSwiGlu(w.w_gate, w.w_up, h_.data(), rows.n, gate_.data(), pool_, {{&w.w_down}});
  }
  ProjectIntoResidual(w.w_down, gate_.data(), w.post_ffn_norm, rows, NextLayerQkv(layer + 1));
}

kernels::NextPass Forward::NextLayerQkv(int layer) const {
  if (layer >= model_.config().n_layers) return {{&model_.output()}};
  const LayerWeights& w = model_.layer(layer);
  return {{&w.wk, &w.wv, &w.wq}};
}

void Forward::ProjectIntoResidual(const kernels::WeightView& w, const float* in,
                                  const std::vector<float>& post_norm, Rows rows,
                                  const kernels::NextPass& next) {
  const ModelConfig& c = model_.config();
  float* x = x_.data() + rows.begin * c.n_embd;
  if (post_norm.empty()) {
    const kernels::MatJob job[] = {{&w, in, x, /*accumulate=*/true}};
    kernels::MatMulMany(job, rows.n, pool_, next);
    return;
  }
  // Gemma: x += RmsNorm(W in) * post_norm.
  const kernels::MatJob job[] = {{&w, in, o_.data()}};
  kernels::MatMulMany(job, rows.n, pool_, next);
  NormRows(c, pool_, o_.data(), post_norm.data(), rows.n, o_.data());
  kernels::AddInPlace(x, o_.data(), rows.n * c.n_embd);
}

void Forward::PrepareRows(std::span<ForwardChunk> chunks, int layer, Rows rows, bool queries,
                          bool kv) {
  const ModelConfig& c = model_.config();
  const LayerWeights& w = model_.layer(layer);
  const kernels::RopeConfig& rope = c.LayerRope(layer);
  pool_->ParallelFor(
      rows.n,
      [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t r = b; r < e; ++r) {
          const std::int64_t t = rows.begin + r;  // batch row
          if (queries) {
            float* q = q_.data() + r * c.q_dim();
            if (!w.bq.empty()) kernels::AddInPlace(q, w.bq.data(), c.q_dim());
            if (c.has_qk_norm) {
              for (int hd = 0; hd < c.n_heads; ++hd) {
                kernels::RmsNorm(q + hd * c.head_dim, w.q_norm.data(), c.head_dim, c.rms_eps,
                                 q + hd * c.head_dim);
              }
            }
            kernels::Rope(rope, q, c.n_heads, row_pos_[t]);
          }
          if (!kv) continue;
          float* k = k_.data() + r * c.kv_dim();
          float* v = v_.data() + r * c.kv_dim();
          if (!w.bk.empty()) kernels::AddInPlace(k, w.bk.data(), c.kv_dim());
          if (!w.bv.empty()) kernels::AddInPlace(v, w.bv.data(), c.kv_dim());
          if (c.has_qk_norm) {
            for (int hd = 0; hd < c.n_kv_heads; ++hd) {
              kernels::RmsNorm(k + hd * c.head_dim, w.k_norm.data(), c.head_dim, c.rms_eps,
                               k + hd * c.head_dim);
            }
          }
          kernels::Rope(rope, k, c.n_kv_heads, row_pos_[t]);
          // The chunk holding batch row t: the last one starting at or before it.
          const auto chunk = std::upper_bound(chunk_first_row_.begin(), chunk_first_row_.end(), t) -
                             chunk_first_row_.begin() - 1;
          for (int hd = 0; hd < c.n_kv_heads; ++hd) {
            chunks[chunk].kv->StoreRow(layer, hd, row_pos_[t], k + hd * c.head_dim, v + hd * c.head_dim);
          }
        }
      },
      kTokenGrain);
}

void Forward::ComputeLogits(std::span<ForwardChunk> chunks) {
  const ModelConfig& c = model_.config();
  // Gather the rows that need logits, normalise them, then one matmul per scratch's worth.
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
  // out[r][n_vocab] = output(RmsNorm(x[rows])), as many rows at a time as the scratch holds.
  auto product = [&](float* out) {
    for (std::int64_t j0 = 0; j0 < r; j0 += scratch_tokens_) {
      const std::int64_t m = std::min(scratch_tokens_, r - j0);
      for (std::int64_t j = 0; j < m; ++j) {
        kernels::RmsNorm(x_.data() + rows[j0 + j] * c.n_embd, model_.output_norm().data(), c.n_embd,
                         c.rms_eps, h_.data() + j * c.n_embd);
      }
      kernels::MatMul(model_.output(), h_.data(), m, out + j0 * c.n_vocab, pool_, NextLayerQkv(0));
    }
  };
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
    product(only->logits->data());
    softcap(only->logits->data());
    return;
  }
  // Several chunks (a decode batch): one product into logits_rows_, kept from step to step. With
  // a fresh vector per step a 64-sequence Qwen2.5-0.5B F16 step (KV 512) took 1.34-1.46x as long
  // on the Zen 5 VM: 39 MB is past glibc's largest mmap threshold (32 MiB), so every step mapped,
  // zeroed and faulted it in anew (docs/RESULTS.md).
  const std::size_t need = static_cast<std::size_t>(r) * c.n_vocab;
  if (logits_rows_.size() < need) logits_rows_.resize(need);
  product(logits_rows_.data());
  softcap(logits_rows_.data());
  std::size_t offset = 0;
  for (ForwardChunk& ch : chunks) {
    if (ch.logits == nullptr) continue;
    const std::size_t count = (ch.all_logits ? ch.tokens.size() : 1) * c.n_vocab;
    ch.logits->assign(logits_rows_.begin() + offset, logits_rows_.begin() + offset + count);
    offset += count;
  }
  // A one-off larger than any decode batch's (several prompts' every-token logits) is not kept.
  if (logits_rows_.size() * sizeof(float) > kKeepLogitsBytes) std::vector<float>().swap(logits_rows_);
}

}  // namespace smartgen::model
