// `smartgen run`: generate text from a prompt in one process, with timings.
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "model/generate.h"
#include "tools/commands.h"
#include "tools/engine_setup.h"

namespace smartgen::tools {
namespace {

struct RunOptions {
  EngineOptions engine;
  std::string prompt;
  std::string prompt_file;
  int n = 32;
  float temp = 0.0f;
  int top_k = 0;
  float top_p = 1.0f;
  std::uint64_t seed = 0;
  bool chat = false;
  std::string chat_template;  // --chat-template: a name or Jinja text; implies --chat
  bool json = false;
  bool ignore_eos = false;
};

Status Run(const RunOptions& o) {
  std::string prompt = o.prompt;
  if (!o.prompt_file.empty()) {
    SG_ASSIGN_OR_RETURN(prompt, core::ReadFileToString(o.prompt_file));
  }
  SG_ASSIGN_OR_RETURN(Engine e, LoadEngine(o.engine, /*max_tokens=*/1 << 20));
  const tokenizer::Tokenizer& tok = e.model->tokenizer();
  const bool chat = o.chat || !o.chat_template.empty();
  if (chat) {
    bool plain = false;
    SG_RETURN_IF_ERROR(
        tokenizer::ResolveChatTemplate(o.chat_template, tok.chat_template(), &plain).status());
    if (plain) std::fprintf(stderr, "warning: the model has no chat template; using the prompt as is\n");
    const tokenizer::ChatMessage messages[] = {{"user", prompt}};
    SG_ASSIGN_OR_RETURN(prompt, tok.ApplyChatTemplate(messages, /*add_generation_prompt=*/true,
                                                      o.chat_template));
  }
  const std::vector<std::int32_t> ids = tok.Encode(prompt, /*add_special=*/true, /*parse_special=*/chat);
  if (!o.json) {
    std::fprintf(stderr, "model: %s\n", e.model->config().ToString().c_str());
    std::fprintf(stderr, "prompt: %zu tokens\n", ids.size());
  }

  kv::SequenceKv seq(e.blocks.get());
  model::GenerateOptions g;
  g.max_tokens = o.n;
  g.sampling = {o.temp, o.top_k, o.top_p, o.seed};
  g.stop_at_eog = !o.ignore_eos;
  model::GenerateStats stats;
  std::vector<std::int32_t> so_far;
  std::string printed;
  auto stream = [&](std::int32_t t) {
    if (o.json) return true;
    so_far.push_back(t);
    // Print the newly completed text (a multi-byte character may span tokens).
    const std::string text = tok.Decode(so_far);
    if (text.size() > printed.size() && text.compare(0, printed.size(), printed) == 0) {
      std::fwrite(text.data() + printed.size(), 1, text.size() - printed.size(), stdout);
      std::fflush(stdout);
      printed = text;
    }
    return true;
  };
  SG_ASSIGN_OR_RETURN(const std::vector<std::int32_t> out,
                      model::Generate(*e.forward, seq, ids, g, &stats, stream));
  const std::size_t kv_per_token = seq.geometry().bytes_per_token();
  if (o.json) {
    nlohmann::json j;
    j["model"] = o.engine.model_path;
    j["prompt_tokens"] = ids;
    j["n_prompt"] = ids.size();
    j["tokens"] = out;
    j["text"] = tok.Decode(out);
    j["prefill_tok_s"] = stats.prefill_tok_s();
    j["decode_tok_s"] = stats.decode_tok_s();
    j["prefill_ms"] = stats.prefill_seconds * 1e3;
    j["decode_ms"] = stats.decode_seconds * 1e3;
    j["kv_bytes_per_token"] = kv_per_token;
    j["threads"] = o.engine.threads;
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("\n");
    std::fprintf(stderr,
                 "prefill: %lld tokens in %.1f ms (%.1f tok/s); decode: %lld tokens in %.1f ms "
                 "(%.1f tok/s); KV %zu bytes/token (%s)\n",
                 static_cast<long long>(stats.n_prompt), stats.prefill_seconds * 1e3,
                 stats.prefill_tok_s(), static_cast<long long>(stats.n_generated),
                 stats.decode_seconds * 1e3, stats.decode_tok_s(), kv_per_token,
                 o.engine.kv_dtype.c_str());
  }
  return Status::Ok();
}

}  // namespace

void RegisterRun(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "generate text from a prompt in one process");
  o->engine.AddFlags(*cmd);
  cmd->add_option("--prompt,-p", o->prompt, "prompt text");
  cmd->add_option("--prompt-file", o->prompt_file, "read the prompt from a file");
  cmd->add_option("-n,--n-predict", o->n, "tokens to generate")->capture_default_str();
  cmd->add_option("--temp", o->temp, "temperature (0 = greedy)")->capture_default_str();
  cmd->add_option("--top-k", o->top_k, "top-k (0 = off)")->capture_default_str();
  cmd->add_option("--top-p", o->top_p, "top-p (1 = off)")->capture_default_str();
  cmd->add_option("--seed", o->seed, "sampling seed")->capture_default_str();
  cmd->add_flag("--chat", o->chat, "wrap the prompt in the model's chat template");
  cmd->add_option("--chat-template", o->chat_template,
                  "chat template to use instead of the model's (implies --chat): " +
                      tokenizer::ChatTemplateNames() + ", or Jinja template text");
  cmd->add_flag("--ignore-eos", o->ignore_eos, "keep generating past end-of-generation tokens");
  cmd->add_flag("--json", o->json, "print one JSON object");
  cmd->callback([o] {
    if (int rc = ReportStatus("run", Run(*o))) throw CLI::RuntimeError(rc);
  });
}

}  // namespace smartgen::tools
