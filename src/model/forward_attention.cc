// Forward::Attention: dense causal attention of a micro-batch's queries over the paged KV of
// their sequences (model/forward.h), and the attention overrides of single-token chunks.
#include <algorithm>
#include <vector>

#include "kernels/attention.h"
#include "model/forward.h"

namespace smartgen::model {
namespace {

// Query tokens per prefill attention work item: small enough to balance the causal triangle
// across threads, large enough to amortise the block list walk.
constexpr std::int64_t kAttentionTile = 32;
// Dense attention over fewer (query token x key position x KV head) rows than this runs on the
// calling thread: a short decode step is cheaper than a pool round trip.
constexpr std::int64_t kInlineAttentionRows = 2048;

}  // namespace

void Forward::Attention(std::span<ForwardChunk> chunks, int layer, Rows rows) {
  const ModelConfig& c = model_.config();
  const int g = c.n_group();
  const std::int64_t rows_end = rows.begin + rows.n;

  // Overridden (decode-node) chunks run one at a time outside the pool: they may wait on the
  // network and may use the pool themselves.
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    if (chunks[i].attention == nullptr) continue;
    const std::int64_t row = chunk_first_row_[i];
    if (row < rows.begin || row >= rows_end) continue;
    const std::int64_t r = row - rows.begin;
    Status s = chunks[i].attention->Attend(layer, q_.data() + r * c.q_dim(), chunk_first_pos_[i],
                                           att_.data() + r * c.q_dim());
    if (!s.ok()) {
      override_status_ = s;
      return;
    }
  }

  // Dense attention for the rest: work items of (chunk, kv head, query tile) over the chunk's
  // tokens in this micro-batch. The lists are reused across calls on this thread (a decode step
  // makes one per layer).
  struct Item {
    std::int32_t chunk, head;
    std::int64_t t_begin, t_end;  // tokens of the chunk
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
    const std::int64_t first_row = chunk_first_row_[i];
    const std::int64_t t_first = std::max(first_row, rows.begin) - first_row;
    const std::int64_t t_last =
        std::min(first_row + static_cast<std::int64_t>(chunks[i].tokens.size()), rows_end) -
        first_row;
    if (t_first >= t_last) continue;  // no token of this chunk in the micro-batch
    for (int hd = 0; hd < c.n_kv_heads; ++hd) {
      LayerBlocks(chunks[i], layer, hd, chunk_first_pos_[i] + t_first, &refs[i * c.n_kv_heads + hd]);
      for (std::int64_t t = t_first; t < t_last; t += kAttentionTile) {
        const std::int64_t t_end = std::min(t_last, t + kAttentionTile);
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
    const std::int64_t row = chunk_first_row_[it.chunk] + it.t_begin - rows.begin;  // scratch row
    const kernels::AttentionParams params =
        c.LayerAttention(layer, chunks[it.chunk].kv->geometry().dtype);
    const float* q = q_base + row * c.q_dim() + it.head * g * c.head_dim;
    float* out = out_base + row * c.q_dim() + it.head * g * c.head_dim;
    const auto& blocks = refs[it.chunk * c.n_kv_heads + it.head];
    const std::int64_t pos = chunk_first_pos_[it.chunk] + it.t_begin;
    if (it.t_end - it.t_begin == 1 && g <= kMaxDecodeGroup) {
      // One query token (a decode step): the decode kernel, which needs no query tile.
      float lse[kMaxDecodeGroup];
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

void Forward::LayerBlocks(const ForwardChunk& chunk, int layer, int head,
                          std::int64_t first_query_pos, std::vector<kernels::KvBlockRef>* list) const {
  list->clear();  // AllRefs appends
  chunk.kv->AllRefs(layer, head, list);
  const std::int64_t window_start = model_.config().LayerKvStart(layer, first_query_pos);
  if (window_start <= 0) return;
  // A sliding layer: blocks wholly before the first query's window hold no visible key (the
  // kernels mask the rest); positions increase along the list.
  std::size_t keep = 0;
  while (keep < list->size() && (*list)[keep].first_pos + (*list)[keep].n_tokens <= window_start) ++keep;
  list->erase(list->begin(), list->begin() + static_cast<std::ptrdiff_t>(keep));
}

}  // namespace smartgen::model
