#include "server/model_backend.h"

#include <chrono>

#include "model/generate.h"

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
  SG_ASSIGN_OR_RETURN(b->model_, model::Model::Load(path));
  b->pool_ = std::make_unique<core::ThreadPool>(options.threads);
  model::ForwardOptions fo;
  fo.max_context = options.context_length;
  b->forward_ = std::make_unique<model::Forward>(*b->model_, b->pool_.get(), fo);
  const kv::KvGeometry geometry =
      b->forward_->KvGeometryFor(options.kv_dtype, options.block_tokens);
  // One sequence of the whole context.
  b->blocks_ =
      std::make_unique<kv::BlockPool>(geometry, geometry.BlocksFor(b->forward_->max_context()) *
                                                    geometry.n_layers * geometry.n_kv_heads);
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

  bool cancelled = false, expired = false;
  const model::TokenCallback callback = [&](std::int32_t token) {
    if (request.deadline.Expired()) {
      expired = true;
      return false;
    }
    if (!on_token(token) || cancelled_now()) {
      cancelled = true;
      return false;
    }
    return true;
  };
  model::GenerateOptions options;
  options.max_tokens = request.max_tokens;
  options.sampling = request.sampling;
  kv::SequenceKv seq(blocks_.get());
  model::GenerateStats stats;
  SG_ASSIGN_OR_RETURN(const std::vector<std::int32_t> tokens,
                      model::Generate(*forward_, seq, request.prompt, options, &stats, callback));
  if (expired) return DeadlineExceeded("request {} ran past its deadline", request.request_id);

  GenerationResult result;
  if (cancelled) {
    result.finish_reason = "cancelled";
  } else if (!tokens.empty() && tokenizer().IsEog(tokens.back())) {
    result.finish_reason = "stop";
  } else {
    result.finish_reason = "length";
  }
  result.stats = {{"mode", "colocated"},
                  {"n_prompt", stats.n_prompt},
                  {"n_generated", stats.n_generated},
                  {"queue_ms", queue_ms},
                  {"prefill_ms", stats.prefill_seconds * 1e3},
                  {"decode_ms", stats.decode_seconds * 1e3}};
  return result;
}

}  // namespace smartgen::server
