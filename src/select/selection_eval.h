// The selection accuracy evaluator: in process, no network. For one model and a prompt set it
// compares decoding with the full KV cache (the reference) against decoding where each step
// attends only to the blocks the policies would have on the decode node (DESIGN.md section 8):
//
//   worst case (proactive_present = false): the on-demand selection alone (sinks, local window,
//       top-budget by summary score; everything for the profile's dense layers) plus the
//       generated tail: nothing pushed proactively or streamed is used;
//   proactive_present = true: the proactive set at transfer ratio R (the blocks the link
//       carries during prefill, ranked by profile prior x SnapKV scores of the last
//       snap_window prompt queries) is present in addition.
//
// Metrics, agreement task (EvalAgreement): the first token comes from the exact prefill and is
// the same by construction; then N = decode_steps steps are compared:
//   teacher-forced top-1 agreement - each step is fed the reference greedy sequence and the two
//       argmax choices are compared (agreed / compared);
//   free-running exact-match length - greedy selective decoding from the first token; the
//       number of generated tokens equal to the reference before the first difference (max N);
//   selection recall per layer - the share of the exact prompt attention mass (the tail
//       excluded; mean over query heads, KV heads and steps) that the attended blocks cover;
//   attended fraction per layer - the share of prompt blocks attended per step;
//   predictor hit rate - the share of layer l+1's on-demand selection that layer l's selection
//       predicted (OnDemandSelector::PredictNext), over non-dense layer pairs.
// Retrieval task (EvalRetrieval, prompts with an answer): the prompt minus its last token is
// prefilled; the last token (the query) is one decode step, dense and selective, and each is
// right when its argmax is the answer; needle recall is the share of (layer, KV head) pairs
// that attended the block holding needle_pos.
//
// Thread-safety: one evaluator per thread; it borrows the Forward and the block pool.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kv/block_pool.h"
#include "model/forward.h"
#include "select/on_demand.h"
#include "select/proactive.h"
#include "select/profile.h"
#include "select/prompt_set.h"

namespace smartgen::select {

struct SelectionEvalOptions {
  int decode_steps = 64;           // N
  double transfer_ratio = 4.0;     // R for the proactive set
  bool proactive_present = false;  // attend to the proactive set as well
  int snap_window = 32;            // last prompt queries of the request scores
  bool free_running = true;
  OnDemandOptions on_demand;
  ProactiveOptions proactive;
};

struct PromptEvalResult {
  std::string label;
  std::int64_t n_prompt = 0;
  // Agreement task.
  int compared = 0;
  int agreed = 0;
  int exact_match = 0;
  // Retrieval task.
  bool full_correct = false;
  bool selective_correct = false;
  double needle_recall = 0;
  // Both.
  std::vector<double> recall;             // [n_layers]
  std::vector<double> attended_fraction;  // [n_layers]
  double predictor_hit = 0;
  double proactive_fraction = 0;  // share of prompt blocks in the proactive set
};

struct SelectionEvalSummary {
  int n_prompts = 0;
  double agreement = 0;    // mean over prompts of agreed / compared
  double exact_match = 0;  // mean free-running exact-match length
  int min_exact_match = 0;
  double full_accuracy = 0;  // retrieval: dense answer accuracy
  double selective_accuracy = 0;
  double needle_recall = 0;
  std::vector<double> recall;             // [n_layers] mean over prompts
  std::vector<double> attended_fraction;  // [n_layers]
  double predictor_hit = 0;
  double proactive_fraction = 0;
};

SelectionEvalSummary Summarize(std::span<const PromptEvalResult> results);

class SelectionEvaluator {
 public:
  // `profile` may be null (and is then the no-profile fallback); all borrowed.
  SelectionEvaluator(model::Forward& forward, kv::BlockPool& blocks, const Profile* profile,
                     const SelectionEvalOptions& options);

  Result<PromptEvalResult> EvalAgreement(const EvalPrompt& prompt);
  Result<PromptEvalResult> EvalRetrieval(const EvalPrompt& prompt);

  // The policy note of the last evaluation (profile or fallback).
  const std::string& policy_note() const { return note_; }

 private:
  class Chooser;
  struct Prefilled;
  Status Prefill(std::span<const std::int32_t> tokens, kv::SequenceKv* seq, Prefilled* out);

  model::Forward& forward_;
  kv::BlockPool& blocks_;
  const Profile* profile_;
  SelectionEvalOptions options_;
  std::string note_;
};

}  // namespace smartgen::select
