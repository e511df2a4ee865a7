#include "tools/ttst_prompts.h"

#include <random>

#include "model/model.h"
#include "select/prompt_set.h"

namespace smartgen::tools {

std::vector<std::int32_t> RandomPrompt(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> dist(32, 126);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(n));
  for (auto& id : ids) id = dist(rng);
  return ids;
}

Result<PromptSet> LoadPromptSet(const PromptSetOptions& o) {
  PromptSet set;
  if (o.set == "random") {
    for (std::int64_t n : o.prompt_tokens) {
      PromptGroup g;
      g.n_prompt = n;
      g.prompts.push_back({fmt::format("random{}", n), RandomPrompt(n, o.seed + n), -1, -1});
      set.groups.push_back(std::move(g));
    }
    return set;
  }
  SG_ASSIGN_OR_RETURN(std::unique_ptr<model::Model> model, model::Model::Load(o.model_path));
  if (o.set == "retrieval") {
    set.task = PromptTask::kRetrieval;
    for (std::int64_t n : o.prompt_tokens) {
      // n is the prompt sent; the generator's prompts end with <q> <kK>, one token longer.
      SG_ASSIGN_OR_RETURN(auto made,
                          select::MakeKvRetrievalPrompts(model->tokenizer(), n + 1, o.count, o.seed + n));
      PromptGroup g;
      g.n_prompt = n;
      for (select::EvalPrompt& p : made) {
        BenchPrompt b;
        b.label = p.label;
        b.forced_first = p.tokens.back();
        p.tokens.pop_back();
        b.prompt = std::move(p.tokens);
        b.answer = p.answer;
        g.prompts.push_back(std::move(b));
      }
      set.groups.push_back(std::move(g));
    }
    return set;
  }
  set.task = PromptTask::kText;
  SG_ASSIGN_OR_RETURN(auto read, select::ReadPrompts(o.set, model->tokenizer()));
  if (read.empty()) return InvalidArgument("prompt set {} has no prompts", o.set);
  PromptGroup g;
  double total = 0;
  for (select::EvalPrompt& p : read) {
    total += static_cast<double>(p.tokens.size());
    g.prompts.push_back({p.label, std::move(p.tokens), -1, -1});
  }
  g.n_prompt = static_cast<std::int64_t>(total / static_cast<double>(read.size()) + 0.5);
  set.groups.push_back(std::move(g));
  return set;
}

}  // namespace smartgen::tools
