// ModelBackend: a CompletionBackend that runs the engine in this process with
// model::Generate, one request at a time (others wait for the engine, up to their deadline).
// It is the `colocated` reference: the simplest correct backend, used by the server tests and
// for serving a model without the disaggregated nodes. It does no batching; the node layer's
// backends do. A request cancelled (GenerationRequest::cancel) while it waits for the engine
// leaves the wait at once; a running one stops at its next token.
//
// Transfer modes: "" and "colocated" only; any other mode is kUnimplemented (HTTP 400).
// Honours every sampling field (model/sampler.h: penalties, min_p, logit_bias, logprobs) and
// ignore_eos. n > 1 choices share the prompt: it is prefilled once and its KV copied into each
// choice's sequence (a fork), and the choices then decode together, one batch per step.
// Stats returned per request: mode, n_prompt, n_generated (all choices), choices, queue_ms,
// prefill_ms, decode_ms.
//
// Thread-safety: Generate() may be called from many threads; they are serialised.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "core/result.h"
#include "core/thread_pool.h"
#include "kv/block_pool.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/sampler.h"
#include "server/completion_backend.h"

namespace smartgen::server {

struct ModelBackendOptions {
  int threads = 2;  // compute threads
  std::string cpus;  // CPUs of the process and its compute threads ("0-3"; "" = any): ThreadPool::CreateOn
  kv::KvDType kv_dtype = kv::KvDType::kF16;
  int block_tokens = 16;
  std::int64_t context_length = 0;  // 0 = the model's training context
  std::string model_name;           // "" = the GGUF file name without .gguf
};

class ModelBackend final : public CompletionBackend {
 public:
  // Loads the GGUF model at `path`; errors as model::Model::Load.
  static Result<std::unique_ptr<ModelBackend>> Load(const std::string& path,
                                                    const ModelBackendOptions& options);

  const tokenizer::Tokenizer& tokenizer() const override { return model_->tokenizer(); }
  std::string model_name() const override { return name_; }
  std::int64_t context_length() const override { return forward_->max_context(); }
  BackendFeatures features() const override {
    return {.logprobs = true, .logit_processing = true, .ignore_eos = true, .choices = true};
  }
  Result<GenerationResult> Generate(const GenerationRequest& request,
                                    const TokenSink& on_token) override;

 private:
  // One choice of a request: its own KV (a copy of the prompt's), sampler and logits.
  struct Choice {
    std::unique_ptr<kv::SequenceKv> seq;
    model::Sampler sampler{model::SamplingParams{}};
    std::vector<float> logits;
    std::int32_t last = 0;
    int n_out = 0;
    bool active = true;
    bool ended_by_client = false;  // on_token returned false
  };

  ModelBackend() = default;

  std::unique_ptr<model::Model> model_;
  std::unique_ptr<core::ThreadPool> pool_;
  std::unique_ptr<model::Forward> forward_;
  std::unique_ptr<kv::BlockPool> blocks_;
  std::string name_;
  // One generation at a time: busy_ is the engine's owner flag, waited for with a deadline.
  std::mutex mu_;
  std::condition_variable idle_cv_;
  bool busy_ = false;  // guarded by mu_
};

}  // namespace smartgen::server
