#include "select/profile_builder.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/attention.h"
#include "model/sampler.h"
#include "select/attention_mass.h"
#include "select/block_summary.h"
#include "select/selective_attention.h"

namespace smartgen::select {

// Exact dense attention for decode steps, recording every (layer, head)'s block masses into
// the builder's accumulators.
class ProfileBuilder::Recorder final : public model::AttentionOverride {
 public:
  Recorder(ProfileBuilder* b, const kv::SequenceKv* kv, std::int64_t n_prompt,
           std::vector<LayerSummaries> summaries)
      : b_(b),
        c_(b->forward_.model().config()),
        kv_(kv),
        n_prompt_(n_prompt),
        summaries_(std::move(summaries)) {
    nb_ = static_cast<std::int32_t>(kv->geometry().BlocksFor(n_prompt));
    all_.resize(nb_);
    std::iota(all_.begin(), all_.end(), 0);
    const ProfileOptions& o = b->options_;
    top_ = o.top_blocks > 0 ? std::min(o.top_blocks, nb_)
                            : std::max<std::int32_t>(
                                  1, static_cast<std::int32_t>(std::ceil(o.top_fraction * nb_)));
    sinks_ = std::min(o.sink_blocks, nb_);
    local_begin_ = std::max(sinks_, nb_ - o.local_blocks);
  }

  Status Attend(int layer, const float* q, std::int64_t pos, float* out) override {
    const int g = c_.n_group();
    const kernels::AttentionParams p = c_.LayerAttention(layer, kv_->geometry().dtype);
    for (int h = 0; h < c_.n_kv_heads; ++h) {
      const std::size_t off = std::size_t(h) * g * c_.head_dim;
      refs_.clear();
      SelectedRefs(*kv_, layer, h, n_prompt_, all_, pos, &refs_);
      lse_.resize(g);
      kernels::AttendBlocks(p, q + off, pos, refs_, out + off, lse_.data());
      mass_.resize(refs_.size());
      BlockAttentionMass(p, q + off, 0, 1, pos, refs_, mass_.data());
      ub_.resize(nb_);
      summaries_[layer].UpperBounds(h, q + off, g, ub_.data());
      Record(layer, h);
    }
    return Status::Ok();
  }

 private:
  void Record(int layer, int h) {
    const ProfileOptions& o = b_->options_;
    const int H = c_.n_kv_heads;
    const std::size_t lh = std::size_t(layer) * H + h;
    const float* m = mass_.data();
    double prompt = 0, edge = 0;
    for (std::int32_t i = 0; i < nb_; ++i) {
      prompt += m[i];
      if (i < sinks_ || i >= local_begin_) edge += m[i];
    }
    double tail = 0;
    for (std::size_t i = nb_; i < mass_.size(); ++i) tail += m[i];
    b_->stream_mass_[lh] += edge + tail;
    b_->samples_[lh] += 1;

    // Exact top blocks by mass: position frequencies and edge counters.
    order_.resize(nb_);
    std::iota(order_.begin(), order_.end(), 0);
    auto by_mass = [&](std::int32_t a, std::int32_t b) {
      return m[a] > m[b] || (m[a] == m[b] && a > b);
    };
    std::partial_sort(order_.begin(), order_.begin() + top_, order_.end(), by_mass);
    in_top_.assign(nb_, 0);
    for (std::int32_t i = 0; i < top_; ++i) in_top_[order_[i]] = 1;
    const int nk = o.n_position_buckets;
    for (std::int32_t i = 0; i < nb_; ++i) {
      const std::size_t k = lh * nk + static_cast<std::size_t>(std::int64_t{i} * nk / nb_);
      b_->pos_seen_[k] += 1;
      b_->pos_top_[k] += in_top_[i];
    }
    for (int i = 0; i < kProfileEdgeBlocks && i < nb_; ++i) {
      const std::size_t k = lh * kProfileEdgeBlocks + i;
      b_->edge_seen_[k] += 1;
      b_->first_top_[k] += in_top_[i];
      b_->last_top_[k] += in_top_[nb_ - 1 - i];
    }

    // Recall vs budget: sinks + local window + the top k others, exact or by summary score.
    if (prompt <= 0) return;
    const std::size_t nbud = o.recall_budgets.size();
    for (int pass = 0; pass < 2; ++pass) {
      const float* key = pass == 0 ? m : ub_.data();
      order_.clear();
      for (std::int32_t i = sinks_; i < local_begin_; ++i) order_.push_back(i);
      std::sort(order_.begin(), order_.end(), [&](std::int32_t a, std::int32_t b) {
        return key[a] > key[b] || (key[a] == key[b] && a > b);
      });
      std::vector<double>& acc = pass == 0 ? b_->oracle_ : b_->quest_;
      for (std::size_t j = 0; j < nbud; ++j) {
        double covered = edge;
        const std::size_t k = std::min<std::size_t>(o.recall_budgets[j], order_.size());
        for (std::size_t i = 0; i < k; ++i) covered += m[order_[i]];
        acc[std::size_t(layer) * nbud + j] += std::min(1.0, covered / prompt) / H;
      }
    }
  }

  ProfileBuilder* b_;
  const model::ModelConfig& c_;
  const kv::SequenceKv* kv_;
  std::int64_t n_prompt_;
  std::vector<LayerSummaries> summaries_;
  std::int32_t nb_ = 0, top_ = 0, sinks_ = 0, local_begin_ = 0;
  std::vector<std::int32_t> all_, order_;
  std::vector<std::uint8_t> in_top_;
  std::vector<kernels::KvBlockRef> refs_;
  std::vector<float> mass_, ub_, lse_;
};

ProfileBuilder::ProfileBuilder(model::Forward& forward, kv::BlockPool& blocks,
                               const ProfileOptions& options)
    : forward_(forward), blocks_(blocks), options_(options) {
  const model::ModelConfig& c = forward.model().config();
  const std::size_t lh = std::size_t(c.n_layers) * c.n_kv_heads;
  pos_top_.assign(lh * options.n_position_buckets, 0);
  pos_seen_.assign(lh * options.n_position_buckets, 0);
  first_top_.assign(lh * kProfileEdgeBlocks, 0);
  last_top_.assign(lh * kProfileEdgeBlocks, 0);
  edge_seen_.assign(lh * kProfileEdgeBlocks, 0);
  stream_mass_.assign(lh, 0);
  samples_.assign(lh, 0);
  oracle_.assign(std::size_t(c.n_layers) * options.recall_budgets.size(), 0);
  quest_.assign(std::size_t(c.n_layers) * options.recall_budgets.size(), 0);
}

ProfileBuilder::~ProfileBuilder() = default;

Status ProfileBuilder::AddPrompt(std::span<const std::int32_t> prompt) {
  const model::ModelConfig& c = forward_.model().config();
  const kv::KvGeometry& g = blocks_.geometry();
  const std::int64_t n = static_cast<std::int64_t>(prompt.size());
  if (n < 2 * g.block_tokens) {
    return InvalidArgument("calibration prompt of {} tokens is shorter than two {}-token blocks", n,
                           g.block_tokens);
  }
  const std::int64_t replay = options_.replay_prompt_tokens;
  if (options_.n_position_buckets <= 0 || options_.decode_steps < 0 || replay < 0 ||
      replay + options_.decode_steps == 0 || n - replay < 2 * g.block_tokens) {
    return InvalidArgument(
        "profile options need position buckets, recorded steps, and a prompt "
        "of two blocks before the replayed tokens");
  }
  // The prompt minus its replayed tail is prefilled; the tail and then greedy tokens are
  // recorded one step at a time.
  const std::int64_t n_prefill = n - replay;
  kv::SequenceKv seq(&blocks_);
  std::vector<float> logits;
  SG_RETURN_IF_ERROR(forward_.RunOne(&seq, prompt.first(n_prefill), &logits));
  std::vector<LayerSummaries> summaries;
  for (int l = 0; l < c.n_layers; ++l)
    summaries.push_back(LayerSummaries::Build(seq, l, n_prefill));
  Recorder recorder(this, &seq, n_prefill, std::move(summaries));
  std::int32_t token = replay > 0 ? prompt[n_prefill] : model::Greedy(logits);
  for (std::int64_t step = 0; step < replay + options_.decode_steps; ++step) {
    model::ForwardChunk d;
    d.kv = &seq;
    d.tokens = std::span<const std::int32_t>(&token, 1);
    d.logits = &logits;
    d.attention = &recorder;
    model::ForwardChunk ds[1] = {d};
    SG_RETURN_IF_ERROR(forward_.Run(ds));
    token = n_prefill + step + 1 < n ? prompt[n_prefill + step + 1] : model::Greedy(logits);
  }
  min_len_ = n_prompts_ == 0 ? n : std::min(min_len_, n);
  max_len_ = n_prompts_ == 0 ? n : std::max(max_len_, n);
  ++n_prompts_;
  return Status::Ok();
}

Result<Profile> ProfileBuilder::Finish() const {
  if (n_prompts_ == 0) return FailedPrecondition("no calibration prompt was profiled");
  const model::Model& model = forward_.model();
  const model::ModelConfig& c = model.config();
  Profile p;
  p.model_name = c.name.empty() ? c.arch_name : c.name;
  p.fingerprint = model.fingerprint();
  p.n_layers = c.n_layers;
  p.n_heads = c.n_heads;
  p.n_kv_heads = c.n_kv_heads;
  p.head_dim = c.head_dim;
  p.block_tokens = blocks_.geometry().block_tokens;
  p.min_prompt_tokens = PromptLengthBucket(min_len_).first;
  p.max_prompt_tokens = PromptLengthBucket(max_len_).second;
  p.n_prompts = n_prompts_;
  p.decode_steps = options_.replay_prompt_tokens + options_.decode_steps;  // recorded steps
  p.top_blocks = options_.top_blocks;
  p.top_fraction = options_.top_blocks > 0 ? 0.0f : options_.top_fraction;
  p.sink_blocks = options_.sink_blocks;
  p.local_blocks = options_.local_blocks;
  p.n_position_buckets = options_.n_position_buckets;
  p.recall_budgets = options_.recall_budgets;
  const std::size_t nbud = p.recall_budgets.size();
  const int H = c.n_kv_heads, nk = options_.n_position_buckets;
  auto ratio = [](double a, double b) { return b > 0 ? static_cast<float>(a / b) : 0.0f; };
  for (int l = 0; l < c.n_layers; ++l) {
    LayerProfile lp;
    double layer_samples = 0;
    for (int h = 0; h < H; ++h) {
      const std::size_t lh = std::size_t(l) * H + h;
      HeadProfile hp;
      for (int k = 0; k < nk; ++k)
        hp.position_freq.push_back(ratio(pos_top_[lh * nk + k], pos_seen_[lh * nk + k]));
      for (int i = 0; i < kProfileEdgeBlocks; ++i) {
        hp.first_freq.push_back(ratio(first_top_[lh * kProfileEdgeBlocks + i],
                                      edge_seen_[lh * kProfileEdgeBlocks + i]));
        hp.last_freq.push_back(
            ratio(last_top_[lh * kProfileEdgeBlocks + i], edge_seen_[lh * kProfileEdgeBlocks + i]));
      }
      hp.streaming_score = ratio(stream_mass_[lh], samples_[lh]);
      lp.mean_streaming_score += hp.streaming_score / H;
      layer_samples += samples_[lh] / H;
      lp.heads.push_back(std::move(hp));
    }
    for (std::size_t j = 0; j < nbud; ++j) {
      lp.oracle_recall.push_back(ratio(oracle_[l * nbud + j], layer_samples));
      lp.quest_recall.push_back(ratio(quest_[l * nbud + j], layer_samples));
    }
    p.layers.push_back(std::move(lp));
  }
  // Dense layers: the first ones, then the layers with the lowest recall below the threshold,
  // never more than max_dense_fraction of the layers (beyond the first ones): a model whose
  // attention is spread out everywhere keeps selecting instead of going dense throughout.
  const int forced = std::min(options_.dense_first_layers, c.n_layers / 4);
  const auto check =
      std::find(p.recall_budgets.begin(), p.recall_budgets.end(), options_.dense_check_budget);
  std::vector<int> low;
  for (int l = forced; l < c.n_layers && check != p.recall_budgets.end(); ++l) {
    if (p.layers[l].quest_recall[check - p.recall_budgets.begin()] <
        options_.dense_recall_threshold) {
      low.push_back(l);
    }
  }
  std::stable_sort(low.begin(), low.end(), [&](int a, int b) {
    const auto j = check - p.recall_budgets.begin();
    return p.layers[a].quest_recall[j] < p.layers[b].quest_recall[j];
  });
  const int cap = std::max(0, static_cast<int>(options_.max_dense_fraction * c.n_layers) - forced);
  if (std::ssize(low) > cap) low.resize(cap);
  for (int l = 0; l < forced; ++l) p.dense_layers.push_back(l);
  p.dense_layers.insert(p.dense_layers.end(), low.begin(), low.end());
  std::sort(p.dense_layers.begin(), p.dense_layers.end());
  return p;
}

}  // namespace smartgen::select
