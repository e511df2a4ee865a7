#include "select/selection_eval.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/sampler.h"
#include "select/attention_mass.h"
#include "select/block_summary.h"
#include "select/selective_attention.h"

namespace smartgen::select {

struct SelectionEvaluator::Prefilled {
  std::int64_t n_prompt = 0;
  std::vector<float> logits;              // of the last prompt token
  std::vector<LayerSummaries> summaries;  // [n_layers]
  std::vector<LayerSelection> present;    // [n_layers] the proactive set
  double proactive_fraction = 0;
};

// The on-demand policy (plus the proactive set when asked), with the exact attention mass of
// every step measured against what it chose.
class SelectionEvaluator::Chooser final : public BlockChooser {
 public:
  Chooser(const model::ModelConfig& c, const kv::SequenceKv* kv, const Prefilled& pf,
          OnDemandSelector* selector, bool use_present, std::int32_t needle_block)
      : c_(c),
        kv_(kv),
        pf_(pf),
        selector_(selector),
        use_present_(use_present),
        needle_block_(needle_block),
        recall_(c.n_layers, 0),
        attended_(c.n_layers, 0),
        steps_(c.n_layers, 0) {
    nb_ = selector->n_prompt_blocks();
    all_.resize(nb_);
    std::iota(all_.begin(), all_.end(), 0);
  }

  Status Choose(int layer, const float* q, std::int64_t pos, LayerSelection* out) override {
    selector_->Select(layer, q, pf_.summaries[layer], &sel_);
    if (layer > 0 && !selector_->dense(layer) && !selector_->dense(layer - 1)) {
      selector_->PredictNext(layer - 1, &pred_);
      double hit = 0;
      for (int h = 0; h < c_.n_kv_heads; ++h) {
        diff_.heads.assign(1, {});
        std::set_intersection(sel_.heads[h].begin(), sel_.heads[h].end(), pred_.heads[h].begin(),
                              pred_.heads[h].end(), std::back_inserter(diff_.heads[0]));
        hit += sel_.heads[h].empty() ? 1.0 : double(diff_.heads[0].size()) / sel_.heads[h].size();
      }
      hit_sum_ += hit / c_.n_kv_heads;
      ++hit_n_;
    }
    if (use_present_) {
      SelectionUnion(sel_, pf_.present[layer], out);
    } else {
      *out = sel_;
    }
    Measure(layer, q, pos, *out);
    return Status::Ok();
  }

  double recall(int l) const { return steps_[l] ? recall_[l] / steps_[l] : 0; }
  double attended(int l) const { return steps_[l] ? attended_[l] / steps_[l] : 0; }
  double predictor_hit() const { return hit_n_ ? hit_sum_ / hit_n_ : 0; }
  double needle_recall() const { return needle_n_ ? needle_hits_ / needle_n_ : 0; }

 private:
  void Measure(int layer, const float* q, std::int64_t pos, const LayerSelection& sel) {
    const int g = c_.n_group();
    const kernels::AttentionParams p = c_.LayerAttention(layer, kv_->geometry().dtype);
    double recall = 0, attended = 0;
    for (int h = 0; h < c_.n_kv_heads; ++h) {
      refs_.clear();
      SelectedRefs(*kv_, layer, h, pf_.n_prompt, all_, pos, &refs_);
      mass_.resize(refs_.size());
      BlockAttentionMass(p, q + std::size_t(h) * g * c_.head_dim, 0, 1, pos, refs_, mass_.data());
      double total = 0, covered = 0;
      for (std::int32_t b = 0; b < nb_; ++b) total += mass_[b];
      for (std::int32_t b : sel.heads[h]) covered += mass_[b];
      recall += total > 0 ? covered / total : 1.0;
      attended += double(sel.heads[h].size()) / nb_;
      if (needle_block_ >= 0) {
        needle_hits_ += std::binary_search(sel.heads[h].begin(), sel.heads[h].end(), needle_block_);
        needle_n_ += 1;
      }
    }
    recall_[layer] += recall / c_.n_kv_heads;
    attended_[layer] += attended / c_.n_kv_heads;
    steps_[layer] += 1;
  }

  const model::ModelConfig& c_;
  const kv::SequenceKv* kv_;
  const Prefilled& pf_;
  OnDemandSelector* selector_;
  bool use_present_;
  std::int32_t needle_block_;
  std::int32_t nb_ = 0;
  std::vector<std::int32_t> all_;
  LayerSelection sel_, pred_, diff_;
  std::vector<double> recall_, attended_, steps_;
  double hit_sum_ = 0, hit_n_ = 0, needle_hits_ = 0, needle_n_ = 0;
  std::vector<kernels::KvBlockRef> refs_;
  std::vector<float> mass_;
};

namespace {

// One decode step of `token`; attention overridden when `attention` is set.
Status Step(model::Forward& forward, kv::SequenceKv* seq, std::int32_t token,
            model::AttentionOverride* attention, std::vector<float>* logits) {
  model::ForwardChunk c;
  c.kv = seq;
  c.tokens = std::span<const std::int32_t>(&token, 1);
  c.logits = logits;
  c.attention = attention;
  model::ForwardChunk cs[1] = {c};
  return forward.Run(cs);
}

}  // namespace

SelectionEvaluator::SelectionEvaluator(model::Forward& forward, kv::BlockPool& blocks,
                                       const Profile* profile, const SelectionEvalOptions& options)
    : forward_(forward),
      blocks_(blocks),
      profile_(profile),
      options_(options),
      note_(profile ? "profile " + profile->model_name : kNoProfileNote) {}

Status SelectionEvaluator::Prefill(std::span<const std::int32_t> tokens, kv::SequenceKv* seq,
                                   Prefilled* pf) {
  const model::ModelConfig& c = forward_.model().config();
  const kv::KvGeometry& g = blocks_.geometry();
  const std::int64_t n = static_cast<std::int64_t>(tokens.size());
  pf->n_prompt = n;
  pf->summaries.assign(c.n_layers, LayerSummaries());
  pf->present.assign(c.n_layers, LayerSelection());
  const std::int64_t full_bytes = static_cast<std::int64_t>(g.bytes_per_token()) * n;
  const ProactiveBudget budget =
      PlanProactiveBudget(g, n, ProactiveBudgetForRatio(full_bytes, options_.transfer_ratio),
                          profile_, options_.proactive);
  note_ = budget.note;
  std::int64_t pushed = 0;
  std::vector<float> scores;
  model::ForwardChunk chunk;
  chunk.kv = seq;
  chunk.tokens = tokens;
  chunk.logits = &pf->logits;
  // As the prefill node does it: per layer, as soon as its K/V and queries exist.
  chunk.on_layer_q = [&](int layer, const float* q, std::int64_t rows) {
    const std::int64_t w = std::min<std::int64_t>(options_.snap_window, rows);
    RequestScores(c, *seq, layer, n, q + (rows - w) * c.q_dim(), w, &scores);
    const LayerPushPlan plan = PlanLayer(budget, layer, scores, profile_, options_.proactive);
    LayerSelection& present = pf->present[layer];
    present.heads.assign(c.n_kv_heads, {});
    for (const PushItem& item : plan.push)
      present.heads[item.key.kv_head].push_back(item.key.block);
    for (auto& h : present.heads) std::sort(h.begin(), h.end());
    pushed += std::ssize(plan.push);
  };
  chunk.query_rows = options_.snap_window;  // all the scores read
  chunk.on_layer_kv = [&](int layer, std::int64_t, std::int64_t) {
    pf->summaries[layer] = LayerSummaries::Build(*seq, layer, n);
  };
  model::ForwardChunk chunks[1] = {chunk};
  SG_RETURN_IF_ERROR(forward_.Run(chunks));
  pf->proactive_fraction = double(pushed) / double(budget.grid.total());
  return Status::Ok();
}

Result<PromptEvalResult> SelectionEvaluator::EvalAgreement(const EvalPrompt& prompt) {
  const model::ModelConfig& c = forward_.model().config();
  const int n_steps = options_.decode_steps;
  kv::SequenceKv seq(&blocks_);
  Prefilled pf;
  SG_RETURN_IF_ERROR(Prefill(prompt.tokens, &seq, &pf));
  const std::int64_t n = pf.n_prompt;
  const std::int32_t nb = static_cast<std::int32_t>(blocks_.geometry().BlocksFor(n));

  // Reference: greedy with the full KV.
  std::vector<std::int32_t> ref = {model::Greedy(pf.logits)};
  std::vector<float> logits;
  for (int i = 0; i < n_steps; ++i) {
    SG_RETURN_IF_ERROR(Step(forward_, &seq, ref.back(), nullptr, &logits));
    ref.push_back(model::Greedy(logits));
  }

  PromptEvalResult r;
  r.label = prompt.label;
  r.n_prompt = n;
  r.proactive_fraction = pf.proactive_fraction;
  {  // Teacher-forced.
    seq.set_n_tokens(n);
    OnDemandSelector selector(c, nb, options_.on_demand, profile_);
    Chooser chooser(c, &seq, pf, &selector, options_.proactive_present, -1);
    SelectiveAttention attention(c, &seq, n, &chooser);
    for (int i = 0; i < n_steps; ++i) {
      SG_RETURN_IF_ERROR(Step(forward_, &seq, ref[i], &attention, &logits));
      r.agreed += model::Greedy(logits) == ref[i + 1];
      ++r.compared;
    }
    for (int l = 0; l < c.n_layers; ++l) {
      r.recall.push_back(chooser.recall(l));
      r.attended_fraction.push_back(chooser.attended(l));
    }
    r.predictor_hit = chooser.predictor_hit();
  }
  if (options_.free_running) {
    seq.set_n_tokens(n);
    OnDemandSelector selector(c, nb, options_.on_demand, profile_);
    Chooser chooser(c, &seq, pf, &selector, options_.proactive_present, -1);
    SelectiveAttention attention(c, &seq, n, &chooser);
    std::int32_t token = ref[0];
    for (int i = 0; i < n_steps; ++i) {
      SG_RETURN_IF_ERROR(Step(forward_, &seq, token, &attention, &logits));
      token = model::Greedy(logits);
      if (token != ref[i + 1]) break;
      ++r.exact_match;
    }
  }
  return r;
}

Result<PromptEvalResult> SelectionEvaluator::EvalRetrieval(const EvalPrompt& prompt) {
  const model::ModelConfig& c = forward_.model().config();
  if (prompt.tokens.size() < 2 || prompt.answer < 0) {
    return InvalidArgument("retrieval prompt '{}' needs an answer", prompt.label);
  }
  const std::span<const std::int32_t> all = prompt.tokens;
  const std::int64_t n = std::ssize(all) - 1;
  kv::SequenceKv seq(&blocks_);
  Prefilled pf;
  SG_RETURN_IF_ERROR(Prefill(all.first(n), &seq, &pf));
  const std::int32_t nb = static_cast<std::int32_t>(blocks_.geometry().BlocksFor(n));
  PromptEvalResult r;
  r.label = prompt.label;
  r.n_prompt = n;
  r.proactive_fraction = pf.proactive_fraction;
  std::vector<float> logits;
  SG_RETURN_IF_ERROR(Step(forward_, &seq, all[n], nullptr, &logits));
  r.full_correct = model::Greedy(logits) == prompt.answer;

  seq.set_n_tokens(n);
  OnDemandSelector selector(c, nb, options_.on_demand, profile_);
  const std::int32_t needle =
      prompt.needle_pos >= 0 && prompt.needle_pos < n
          ? static_cast<std::int32_t>(prompt.needle_pos / blocks_.geometry().block_tokens)
          : -1;
  Chooser chooser(c, &seq, pf, &selector, options_.proactive_present, needle);
  SelectiveAttention attention(c, &seq, n, &chooser);
  SG_RETURN_IF_ERROR(Step(forward_, &seq, all[n], &attention, &logits));
  r.selective_correct = model::Greedy(logits) == prompt.answer;
  r.needle_recall = chooser.needle_recall();
  for (int l = 0; l < c.n_layers; ++l) {
    r.recall.push_back(chooser.recall(l));
    r.attended_fraction.push_back(chooser.attended(l));
  }
  r.predictor_hit = chooser.predictor_hit();
  return r;
}

SelectionEvalSummary Summarize(std::span<const PromptEvalResult> results) {
  SelectionEvalSummary s;
  s.n_prompts = static_cast<int>(results.size());
  if (results.empty()) return s;
  const double n = static_cast<double>(results.size());
  s.min_exact_match = results[0].exact_match;
  const std::size_t n_layers = results[0].recall.size();
  s.recall.assign(n_layers, 0);
  s.attended_fraction.assign(n_layers, 0);
  for (const PromptEvalResult& r : results) {
    s.agreement += (r.compared ? double(r.agreed) / r.compared : 0) / n;
    s.exact_match += r.exact_match / n;
    s.min_exact_match = std::min(s.min_exact_match, r.exact_match);
    s.full_accuracy += r.full_correct / n;
    s.selective_accuracy += r.selective_correct / n;
    s.needle_recall += r.needle_recall / n;
    s.predictor_hit += r.predictor_hit / n;
    s.proactive_fraction += r.proactive_fraction / n;
    for (std::size_t l = 0; l < n_layers && l < r.recall.size(); ++l) {
      s.recall[l] += r.recall[l] / n;
      s.attended_fraction[l] += r.attended_fraction[l] / n;
    }
  }
  return s;
}

}  // namespace smartgen::select
