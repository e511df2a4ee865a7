#include "model/generate.h"

#include "core/clock.h"

namespace smartgen::model {

Result<std::vector<std::int32_t>> Generate(Forward& forward, kv::SequenceKv& seq,
                                           std::span<const std::int32_t> prompt,
                                           const GenerateOptions& options, GenerateStats* stats,
                                           const TokenCallback& on_token) {
  if (prompt.empty()) return InvalidArgument("the prompt has no tokens");
  GenerateStats local;
  GenerateStats& st = stats ? *stats : local;
  st = GenerateStats{};
  st.n_prompt = static_cast<std::int64_t>(prompt.size());

  const tokenizer::Tokenizer& tok = forward.model().tokenizer();
  Sampler sampler(options.sampling);
  sampler.SetPrompt(prompt);  // repetition_penalty sees the prompt
  std::vector<std::int32_t> out;
  std::vector<float> logits;

  core::Stopwatch watch;
  // In micro-batches (Forward::RunOne), so a long prompt's activation scratch stays small.
  SG_RETURN_IF_ERROR(forward.RunOne(&seq, prompt, &logits));
  st.prefill_seconds = watch.ElapsedSeconds();
  watch.Reset();

  while (static_cast<int>(out.size()) < options.max_tokens) {
    const std::int32_t next = sampler.Sample(logits);
    out.push_back(next);
    st.n_generated = static_cast<std::int64_t>(out.size());
    if (on_token && !on_token(next)) break;
    if (options.stop_at_eog && tok.IsEog(next)) break;
    if (static_cast<int>(out.size()) >= options.max_tokens) break;
    if (seq.n_tokens() >= forward.max_context()) break;  // context full: stop, not an error
    ForwardChunk step;
    step.kv = &seq;
    step.tokens = std::span<const std::int32_t>(&out.back(), 1);
    step.logits = &logits;
    ForwardChunk steps[1] = {step};
    SG_RETURN_IF_ERROR(forward.Run(steps));
  }
  st.decode_seconds = watch.ElapsedSeconds();
  return out;
}

}  // namespace smartgen::model
