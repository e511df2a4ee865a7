#include "server/model_backend.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "model/sampler.h"

namespace smartgen::server {

Result<std::unique_ptr<ModelBackend>> ModelBackend::Load(const std::string& path,
                                                         const ModelBackendOptions& options) {
  if (options.threads < 1 || options.threads > 256) {
    return InvalidArgument("threads {} is out of range", options.threads);
  }
  if (options.block_tokens < 1 || options.block_tokens > 1024) {
    return InvalidArgument("block_tokens {} is out of range", options.block_tokens);
  }
  std::unique_ptr<ModelBackend> b(new ModelBackend());
  SG_ASSIGN_OR_RETURN(b->pool_, core::ThreadPool::CreateOn(options.threads, options.cpus));
  SG_ASSIGN_OR_RETURN(b->model_, model::Model::Load(path));
  model::ForwardOptions fo;
  fo.max_context = options.context_length;
  b->forward_ = std::make_unique<model::Forward>(*b->model_, b->pool_.get(), fo);
  const kv::KvGeometry geometry =
      b->forward_->KvGeometryFor(options.kv_dtype, options.block_tokens);
  // kMaxChoices sequences of the whole context (one request's choices); the pool allocates
  // lazily, so what is not used costs nothing.
  b->blocks_ = std::make_unique<kv::BlockPool>(
      geometry, geometry.BlocksFor(b->forward_->max_context()) * geometry.n_layers *
                    geometry.n_kv_heads * kMaxChoices);
  b->name_ = options.model_name;
  if (b->name_.empty()) {
    const std::size_t slash = path.find_last_of('/');
    b->name_ = path.substr(slash == std::string::npos ? 0 : slash + 1);
    if (b->name_.ends_with(".gguf")) b->name_.resize(b->name_.size() - 5);
  }
  return b;
}

Result<GenerationResult> ModelBackend::Generate(const GenerationRequest& request,
                                                const TokenSink& on_token) {
  if (!request.transfer_mode.empty() && request.transfer_mode != "colocated") {
    return Unimplemented(
        "transfer mode '{}' needs the disaggregated nodes; this server runs "
        "the model in-process (colocated)",
        request.transfer_mode);
  }
  if (request.max_tokens < 1) return InvalidArgument("max_tokens must be at least 1");
  if (static_cast<std::int64_t>(request.prompt.size()) + request.max_tokens > context_length()) {
    return OutOfRange("{} prompt tokens + {} new tokens exceed the context of {}",
                      request.prompt.size(), request.max_tokens, context_length());
  }
  core::Stopwatch queue_watch;
  const auto cancelled_now = [&] { return request.cancel && request.cancel->cancelled(); };
  {
    // A request cancelled while it waits for the engine leaves at once. Lock order: the
    // signal's, then mu_; declared before the lock, the subscription ends after its release.
    CancelSignal::Subscription wake;
    if (request.cancel) {
      wake = request.cancel->OnCancel([this] {
        std::lock_guard<std::mutex> lock(mu_);
        idle_cv_.notify_all();
      });
    }
    std::unique_lock<std::mutex> lock(mu_);
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::nanoseconds(request.deadline.Remaining());
    if (!idle_cv_.wait_until(lock, until, [&] { return !busy_ || cancelled_now(); })) {
      return DeadlineExceeded("request {} waited past its deadline for the engine",
                              request.request_id);
    }
    if (cancelled_now()) {
      return Cancelled("request {} was cancelled while waiting for the engine", request.request_id);
    }
    busy_ = true;
  }
  struct Release {
    ModelBackend* self;
    ~Release() {
      {
        std::lock_guard<std::mutex> lock(self->mu_);
        self->busy_ = false;
      }
      self->idle_cv_.notify_one();
    }
  } release{this};
  const double queue_ms = queue_watch.ElapsedMillis();

  bool expired = false;
  int generated = 0;
  core::Stopwatch watch;
  double prefill_ms = 0;
  // Prefill once; choice 0 continues in `first`, the others in copies of its KV (a fork).
  const int n = std::max(request.n, 1);
  std::vector<Choice> choices(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    Choice& c = choices[static_cast<std::size_t>(i)];
    c.seq = std::make_unique<kv::SequenceKv>(blocks_.get());
    model::SamplingParams p = request.sampling;
    p.seed += static_cast<std::uint64_t>(i);
    c.sampler = model::Sampler(std::move(p));
    c.sampler.SetPrompt(request.prompt);
  }
  SG_RETURN_IF_ERROR(forward_->RunOne(choices[0].seq.get(), request.prompt, &choices[0].logits));
  for (int i = 1; i < n; ++i) {
    SG_RETURN_IF_ERROR(choices[static_cast<std::size_t>(i)].seq->CopyFrom(
        *choices[0].seq, choices[0].seq->n_tokens()));
    choices[static_cast<std::size_t>(i)].logits = choices[0].logits;
  }
  prefill_ms = watch.ElapsedMillis();
  watch.Reset();
  int active = n;
  std::vector<model::ForwardChunk> chunks;
  while (active > 0) {
    // Sample one token for every active choice from its logits, then run them all at once.
    chunks.clear();
    for (int i = 0; i < n; ++i) {
      Choice& c = choices[static_cast<std::size_t>(i)];
      if (!c.active) continue;
      if (request.deadline.Expired()) {
        expired = true;
        break;
      }
      model::TokenLogprobs lp;
      c.last = c.sampler.Sample(c.logits, &lp);
      ++c.n_out;
      ++generated;
      const bool want_lp = request.sampling.logprobs >= 0;
      bool go = on_token(GeneratedToken(c.last, i, want_lp ? &lp : nullptr)) && !cancelled_now();
      if (!go) c.ended_by_client = true;
      if (!request.ignore_eos && tokenizer().IsEog(c.last)) go = false;
      if (c.n_out >= request.max_tokens) go = false;
      if (c.seq->n_tokens() >= forward_->max_context()) go = false;  // context full: stop
      if (!go) {
        c.active = false;
        --active;
        continue;
      }
      model::ForwardChunk chunk;
      chunk.kv = c.seq.get();
      chunk.tokens = std::span<const std::int32_t>(&c.last, 1);
      chunk.logits = &c.logits;
      chunks.push_back(chunk);
    }
    if (expired || cancelled_now()) break;
    if (!chunks.empty()) SG_RETURN_IF_ERROR(forward_->Run(chunks));
  }
  if (expired) return DeadlineExceeded("request {} ran past its deadline", request.request_id);
  bool cancelled = cancelled_now();
  for (const Choice& c : choices) cancelled = cancelled || c.ended_by_client;
  const std::int32_t last = choices[0].last;
  GenerationResult result;
  if (cancelled) {
    result.finish_reason = "cancelled";
  } else if (n == 1 && !request.ignore_eos && tokenizer().IsEog(last)) {
    result.finish_reason = "stop";
  } else {
    result.finish_reason = "length";
  }
  result.stats = {{"mode", "colocated"},
                  {"n_prompt", request.prompt.size()},
                  {"n_generated", generated},
                  {"choices", n},
                  {"queue_ms", queue_ms},
                  {"prefill_ms", prefill_ms},
                  {"decode_ms", watch.ElapsedMillis()}};
  return result;
}

}  // namespace smartgen::server
