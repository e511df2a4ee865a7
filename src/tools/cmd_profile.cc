// `smartgen profile`: measure a selection profile (select/profile.h) from calibration prompts.
//
//   smartgen profile --model M --prompts FILE --out P [--decode-steps N]
//                    [--min-tokens A --max-tokens B --seed S --temp T]
//
// Prompts file: select/prompt_set.h (one prompt per line: text, or JSON with "text"/"tokens").
// With --min-tokens/--max-tokens every prompt is first extended with the model's own sampled
// continuation to a length in [A, B] (e.g. story openings grown to 400-500 tokens).
// Prompts are grouped by length bucket (select::PromptLengthBucket); one bucket writes P, several
// write P with ".<max_tokens>" before the extension (profile.json -> profile.512.json, ...).
#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "select/profile_builder.h"
#include "select/prompt_set.h"
#include "tools/commands.h"
#include "tools/engine_setup.h"

namespace smartgen::tools {
namespace {

struct ProfileCmdOptions {
  EngineOptions engine;
  std::string prompts;
  std::string out;
  std::int64_t min_tokens = 0, max_tokens = 0;
  std::uint64_t seed = 1;
  float temp = 0.8f;
  select::ProfileOptions profile;
};

std::string BucketPath(const std::string& out, std::int64_t max_tokens) {
  const std::size_t dot = out.rfind('.');
  const std::size_t slash = out.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) {
    return fmt::format("{}.{}", out, max_tokens);
  }
  return fmt::format("{}.{}{}", out.substr(0, dot), max_tokens, out.substr(dot));
}

Status RunProfile(const ProfileCmdOptions& o) {
  SG_ASSIGN_OR_RETURN(Engine e, LoadEngine(o.engine, /*max_tokens=*/1 << 20, /*n_seqs=*/2));
  SG_ASSIGN_OR_RETURN(std::vector<select::EvalPrompt> prompts,
                      select::ReadPrompts(o.prompts, e.model->tokenizer()));
  if (o.max_tokens > 0) {
    select::ExtendOptions x{o.min_tokens > 0 ? o.min_tokens : o.max_tokens, o.max_tokens, o.temp,
                            o.seed};
    SG_RETURN_IF_ERROR(select::ExtendPrompts(*e.forward, *e.blocks, x, &prompts));
  }
  std::map<std::int64_t, std::vector<const select::EvalPrompt*>> buckets;
  for (const auto& p : prompts) {
    buckets[select::PromptLengthBucket(std::ssize(p.tokens)).second].push_back(&p);
  }
  for (const auto& [max_tokens, group] : buckets) {
    select::ProfileBuilder builder(*e.forward, *e.blocks, o.profile);
    for (const select::EvalPrompt* p : group) {
      SG_RETURN_IF_ERROR(builder.AddPrompt(p->tokens).WithContext("prompt " + p->label));
    }
    SG_ASSIGN_OR_RETURN(const select::Profile profile, builder.Finish());
    const std::string path = buckets.size() == 1 ? o.out : BucketPath(o.out, max_tokens);
    SG_RETURN_IF_ERROR(select::SaveProfile(profile, path));
    std::fprintf(stderr, "profile: %s: %d prompts, bucket [%lld, %lld] tokens, %d decode steps\n",
                 path.c_str(), profile.n_prompts, static_cast<long long>(profile.min_prompt_tokens),
                 static_cast<long long>(profile.max_prompt_tokens), profile.decode_steps);
    std::string budgets;
    for (int k : profile.recall_budgets) budgets += fmt::format(" k={:<3}", k);
    std::fprintf(stderr, "  layer  streaming  oracle recall:%s | quest recall:%s\n",
                 budgets.c_str(), budgets.c_str());
    for (int l = 0; l < profile.n_layers; ++l) {
      const select::LayerProfile& lp = profile.layers[l];
      std::string line = fmt::format("  {:>5}{} {:>9.3f}  ", l, profile.IsDense(l) ? "*" : " ",
                                     lp.mean_streaming_score);
      line += "             ";
      for (float r : lp.oracle_recall) line += fmt::format(" {:5.3f}", r);
      line += " |              ";
      for (float r : lp.quest_recall) line += fmt::format(" {:5.3f}", r);
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fprintf(stderr, "  * dense layers\n");
  }
  return Status::Ok();
}

}  // namespace

void RegisterProfile(CLI::App& app) {
  auto o = std::make_shared<ProfileCmdOptions>();
  CLI::App* cmd = app.add_subcommand(
      "profile", "measure a selection profile (block importance, dense layers) from prompts");
  o->engine.AddFlags(*cmd);
  cmd->add_option("--prompts", o->prompts, "prompts file (select/prompt_set.h)")->required();
  cmd->add_option("--out", o->out, "profile JSON path")->required();
  cmd->add_option("--decode-steps", o->profile.decode_steps, "greedy decode steps per prompt")
      ->capture_default_str();
  cmd->add_option("--replay-prompt-tokens", o->profile.replay_prompt_tokens,
                  "record the last prompt tokens as decode steps (1 for kv-retrieval)")
      ->capture_default_str();
  cmd->add_option("--min-tokens", o->min_tokens, "extend prompts to at least this many tokens");
  cmd->add_option("--max-tokens", o->max_tokens, "extend prompts to at most this many tokens");
  cmd->add_option("--seed", o->seed, "seed of the prompt extension")->capture_default_str();
  cmd->add_option("--temp", o->temp, "temperature of the prompt extension")->capture_default_str();
  cmd->add_option("--top-fraction", o->profile.top_fraction,
                  "share of blocks counted as 'top' for position frequencies")
      ->capture_default_str();
  cmd->add_option("--dense-first", o->profile.dense_first_layers,
                  "first layers always dense (clamped to n_layers/4)")
      ->capture_default_str();
  cmd->add_option("--dense-threshold", o->profile.dense_recall_threshold,
                  "a layer is dense when its summary-score recall at --dense-budget is below this")
      ->capture_default_str();
  cmd->add_option("--max-dense", o->profile.max_dense_fraction,
                  "most layers that may be dense, as a share of all layers")
      ->capture_default_str();
  cmd->add_option("--dense-budget", o->profile.dense_check_budget,
                  "blocks per KV head for the dense-layer recall check")
      ->capture_default_str();
  cmd->callback([o] {
    if (int rc = ReportStatus("profile", RunProfile(*o))) throw CLI::RuntimeError(rc);
  });
}

}  // namespace smartgen::tools
