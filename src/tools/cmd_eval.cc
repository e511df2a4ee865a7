// `smartgen eval select`: selection accuracy against full-KV decoding, in process
// (select/selection_eval.h says what is measured).
//
//   smartgen eval select --model M --prompts FILE [--min-tokens A --max-tokens B]
//                        [--profile P] [--ratio R] [--steps N] [--mode ondemand|proactive|both]
//                        [--budget-blocks K[,K...]] [--json]
//   smartgen eval select --model kv-retrieval-tiny.gguf --task kv-retrieval --length 1024 --count
//   200
//
// Prompts with an "answer" (and the generated kv-retrieval task) are scored as retrieval: the
// last prompt token is a selective decode step and its argmax must be the answer. Others are
// scored by teacher-forced top-1 agreement over --steps tokens, free-running exact-match
// length, and selection recall per layer. --budget-blocks 0 means the default fractional
// budget (select::OnDemandOptions). --save-prompts writes the (generated or extended) prompts as
// JSONL token ids, so runs can be repeated exactly.
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/mapped_file.h"
#include "select/selection_eval.h"
#include "tools/commands.h"
#include "tools/engine_setup.h"

namespace smartgen::tools {
namespace {

struct EvalCmdOptions {
  EngineOptions engine;
  std::string prompts;
  std::string task;
  std::int64_t length = 1024;
  int count = 100;
  std::int64_t min_tokens = 0, max_tokens = 0;
  std::uint64_t seed = 1;
  float temp = 0.8f;
  std::string save_prompts;
  std::vector<std::string> profiles;
  std::string mode = "both";
  std::vector<int> budget_blocks = {0};
  select::SelectionEvalOptions eval;
  bool json = false;
};

nlohmann::json ToJson(const select::SelectionEvalSummary& s, bool retrieval) {
  nlohmann::json j;
  j["n_prompts"] = s.n_prompts;
  if (retrieval) {
    j["full_accuracy"] = s.full_accuracy;
    j["selective_accuracy"] = s.selective_accuracy;
    j["needle_recall"] = s.needle_recall;
  } else {
    j["teacher_forced_agreement"] = s.agreement;
    j["exact_match_mean"] = s.exact_match;
    j["exact_match_min"] = s.min_exact_match;
  }
  j["recall_per_layer"] = s.recall;
  j["attended_fraction_per_layer"] = s.attended_fraction;
  j["predictor_hit"] = s.predictor_hit;
  j["proactive_fraction"] = s.proactive_fraction;
  return j;
}

Status RunEval(const EvalCmdOptions& o) {
  SG_ASSIGN_OR_RETURN(Engine e, LoadEngine(o.engine, /*max_tokens=*/1 << 20, /*n_seqs=*/2));
  const model::ModelConfig& c = e.model->config();
  std::vector<select::EvalPrompt> prompts;
  if (o.task == "kv-retrieval") {
    SG_ASSIGN_OR_RETURN(
        prompts, select::MakeKvRetrievalPrompts(e.model->tokenizer(), o.length, o.count, o.seed));
  } else if (!o.task.empty()) {
    return InvalidArgument("unknown --task '{}' (kv-retrieval)", o.task);
  } else if (o.prompts.empty()) {
    return InvalidArgument("give --prompts FILE or --task kv-retrieval");
  } else {
    SG_ASSIGN_OR_RETURN(prompts, select::ReadPrompts(o.prompts, e.model->tokenizer()));
  }
  if (o.max_tokens > 0) {
    select::ExtendOptions x{o.min_tokens > 0 ? o.min_tokens : o.max_tokens, o.max_tokens, o.temp,
                            o.seed};
    SG_RETURN_IF_ERROR(select::ExtendPrompts(*e.forward, *e.blocks, x, &prompts));
  }
  if (!o.save_prompts.empty()) {
    SG_RETURN_IF_ERROR(core::WriteStringToFile(o.save_prompts, select::PromptsToJsonl(prompts)));
  }
  std::vector<select::Profile> profiles;
  for (const std::string& path : o.profiles) {
    SG_ASSIGN_OR_RETURN(select::Profile p, select::LoadProfile(path));
    SG_RETURN_IF_ERROR(
        p.Validate(c, e.model->fingerprint(), o.engine.block_tokens).WithContext(path));
    profiles.push_back(std::move(p));
  }
  std::vector<bool> modes;  // proactive_present
  if (o.mode == "ondemand" || o.mode == "both") modes.push_back(false);
  if (o.mode == "proactive" || o.mode == "both") modes.push_back(true);
  if (modes.empty()) return InvalidArgument("--mode must be ondemand, proactive or both");

  nlohmann::json records = nlohmann::json::array();
  for (bool proactive : modes) {
    for (int budget : o.budget_blocks) {
      select::SelectionEvalOptions opts = o.eval;
      opts.proactive_present = proactive;
      opts.on_demand.budget_blocks = budget;
      std::vector<select::PromptEvalResult> results;
      bool retrieval = false;
      std::string note;
      const core::Stopwatch watch;
      for (const select::EvalPrompt& p : prompts) {
        const select::Profile* profile = select::PickProfile(profiles, std::ssize(p.tokens));
        select::SelectionEvaluator evaluator(*e.forward, *e.blocks, profile, opts);
        retrieval = p.answer >= 0;
        Result<select::PromptEvalResult> r =
            retrieval ? evaluator.EvalRetrieval(p) : evaluator.EvalAgreement(p);
        if (!r.ok()) return r.status().WithContext("prompt " + p.label);
        note = evaluator.policy_note();
        results.push_back(std::move(*r));
      }
      const select::SelectionEvalSummary s = select::Summarize(results);
      nlohmann::json rec = ToJson(s, retrieval);
      rec["mode"] = proactive ? "proactive+ondemand" : "ondemand";
      rec["budget_blocks"] = budget;
      rec["budget_fraction"] = budget > 0 ? 0.0 : opts.on_demand.budget_fraction;
      rec["transfer_ratio"] = opts.transfer_ratio;
      rec["decode_steps"] = retrieval ? 1 : opts.decode_steps;
      rec["policy"] = note;
      rec["seconds"] = watch.ElapsedSeconds();
      std::int64_t min_len = 1 << 30, max_len = 0;
      for (const auto& r : results) {
        min_len = std::min(min_len, r.n_prompt);
        max_len = std::max(max_len, r.n_prompt);
      }
      rec["prompt_tokens"] = {min_len, max_len};
      nlohmann::json per_prompt = nlohmann::json::array();
      for (const auto& r : results) {
        nlohmann::json pj = {{"label", r.label}, {"n_prompt", r.n_prompt}};
        if (retrieval) {
          pj["full_correct"] = r.full_correct;
          pj["selective_correct"] = r.selective_correct;
        } else {
          pj["agreed"] = r.agreed;
          pj["compared"] = r.compared;
          pj["exact_match"] = r.exact_match;
        }
        per_prompt.push_back(pj);
      }
      rec["prompts"] = per_prompt;
      records.push_back(rec);
      if (!o.json) {
        std::string recall;
        for (double r : s.recall) recall += fmt::format(" {:.3f}", r);
        std::string att;
        for (double a : s.attended_fraction) att += fmt::format(" {:.2f}", a);
        const std::string budget_text =
            budget > 0 ? fmt::format("{} blocks", budget)
                       : fmt::format("{:g} of blocks", opts.on_demand.budget_fraction);
        if (retrieval) {
          std::printf(
              "%-18s budget %-14s R=%g  prompts %d: full %.1f%%  selective %.1f%%  needle "
              "recall %.3f\n",
              rec["mode"].get<std::string>().c_str(), budget_text.c_str(), opts.transfer_ratio,
              s.n_prompts, 100 * s.full_accuracy, 100 * s.selective_accuracy, s.needle_recall);
        } else {
          std::printf(
              "%-18s budget %-14s R=%g  prompts %d: teacher-forced agreement %.2f%%  exact "
              "match mean %.1f (min %d) of %d\n",
              rec["mode"].get<std::string>().c_str(), budget_text.c_str(), opts.transfer_ratio,
              s.n_prompts, 100 * s.agreement, s.exact_match, s.min_exact_match, opts.decode_steps);
        }
        std::printf(
            "    recall per layer:%s\n    attended share:  %s   predictor hit %.3f  "
            "proactive share %.3f\n    policy: %s\n",
            recall.c_str(), att.c_str(), s.predictor_hit, s.proactive_fraction, note.c_str());
      }
    }
  }
  if (o.json) std::printf("%s\n", records.dump(1).c_str());
  return Status::Ok();
}

}  // namespace

void RegisterEval(CLI::App& app) {
  CLI::App* eval = app.add_subcommand("eval", "accuracy evaluations");
  eval->require_subcommand(1);
  auto o = std::make_shared<EvalCmdOptions>();
  CLI::App* cmd = eval->add_subcommand(
      "select", "selective-KV decoding against full-KV decoding (agreement, recall, retrieval)");
  o->engine.AddFlags(*cmd);
  cmd->add_option("--prompts", o->prompts, "prompts file (select/prompt_set.h)");
  cmd->add_option("--task", o->task, "generated task instead of --prompts: kv-retrieval");
  cmd->add_option("--length", o->length, "kv-retrieval prompt tokens")->capture_default_str();
  cmd->add_option("--count", o->count, "kv-retrieval prompts")->capture_default_str();
  cmd->add_option("--min-tokens", o->min_tokens, "extend prompts to at least this many tokens");
  cmd->add_option("--max-tokens", o->max_tokens, "extend prompts to at most this many tokens");
  cmd->add_option("--seed", o->seed, "seed of generated/extended prompts")->capture_default_str();
  cmd->add_option("--temp", o->temp, "temperature of the prompt extension")->capture_default_str();
  cmd->add_option("--save-prompts", o->save_prompts, "write the prompts used as JSONL token ids");
  cmd->add_option("--profile", o->profiles, "profile JSON (repeatable: one per length bucket)");
  cmd->add_option("--mode", o->mode, "ondemand (worst case), proactive (+ proactive set), both")
      ->capture_default_str();
  cmd->add_option("--ratio", o->eval.transfer_ratio, "transfer ratio R of the proactive set")
      ->capture_default_str();
  cmd->add_option("--steps", o->eval.decode_steps, "decode steps compared")->capture_default_str();
  cmd->add_option("--budget-blocks", o->budget_blocks,
                  "on-demand top blocks per KV head (list; 0 = --budget-fraction)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--budget-fraction", o->eval.on_demand.budget_fraction,
                  "on-demand budget as a share of the prompt's blocks")
      ->capture_default_str();
  cmd->add_option("--min-budget", o->eval.on_demand.min_budget_blocks,
                  "floor of the fractional budget, blocks")
      ->capture_default_str();
  cmd->add_option("--sink-blocks", o->eval.on_demand.sink_blocks, "sink blocks")
      ->capture_default_str();
  cmd->add_option("--local-blocks", o->eval.on_demand.local_blocks,
                  "last prompt blocks always attended")
      ->capture_default_str();
  cmd->add_option("--snap-window", o->eval.snap_window, "prompt queries of the request scores")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "print JSON records");
  cmd->callback([o] {
    if (int rc = ReportStatus("eval select", RunEval(*o))) throw CLI::RuntimeError(rc);
  });
}

}  // namespace smartgen::tools
