#include "scripted_backend.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/metrics.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/synthetic_vocab.h"

namespace smartgen::server::testing {

std::vector<std::int32_t> TokensOf(std::string_view text) {
  std::vector<std::int32_t> ids;
  for (char c : text) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

namespace {

int DefaultOffset(const std::vector<std::int32_t>& prompt) {
  std::uint32_t h = 0;
  for (std::int32_t t : prompt) h = h * 31 + static_cast<std::uint32_t>(t);
  return static_cast<int>(h % 26);
}

std::string TokenizerPath() {
  static const std::string path = [] {
    const std::string p = ::testing::TempDir() + "/server_test_byte_vocab.gguf";
    gguf::GgufWriter writer;
    EXPECT_TRUE(tokenizer::WriteSyntheticByteVocab(writer, 384).ok());
    EXPECT_TRUE(writer.WriteFile(p).ok());
    return p;
  }();
  return path;
}

}  // namespace

std::string ExpectedDefaultText(const std::vector<std::int32_t>& prompt, int n_tokens) {
  std::string text;
  const int offset = DefaultOffset(prompt);
  for (int i = 0; i < n_tokens; ++i) text.push_back(static_cast<char>('a' + (offset + i) % 26));
  return text;
}

std::unique_ptr<tokenizer::Tokenizer> MakeByteTokenizer() {
  Result<gguf::GgufFile> file = gguf::GgufFile::Open(TokenizerPath());
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return nullptr;
  Result<std::unique_ptr<tokenizer::Tokenizer>> tok = tokenizer::Tokenizer::FromGguf(*file);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(*tok) : nullptr;
}

ScriptedBackend::ScriptedBackend(std::int64_t context_length)
    : tokenizer_(MakeByteTokenizer()), context_length_(context_length) {}

void ScriptedBackend::SetScript(Script script) {
  std::lock_guard<std::mutex> lock(mu_);
  script_ = std::move(script);
}

void ScriptedBackend::CloseGate() {
  std::lock_guard<std::mutex> lock(mu_);
  gate_open_ = false;
}

void ScriptedBackend::OpenGate() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    gate_open_ = true;
  }
  gate_cv_.notify_all();
}

void ScriptedBackend::SetHealth(Status health) {
  std::lock_guard<std::mutex> lock(mu_);
  health_ = std::move(health);
}

Status ScriptedBackend::Health() const {
  std::lock_guard<std::mutex> lock(mu_);
  return health_;
}

void ScriptedBackend::AppendMetrics(std::string* out) const {
  core::AppendMetricHeader(out, "scripted_backend_calls_total", "Generate calls", "counter");
  core::AppendMetricSample(out, "scripted_backend_calls_total", {}, calls_.load());
}

GenerationRequest ScriptedBackend::last_request() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_request_;
}

void ScriptedBackend::SetFeatures(BackendFeatures features) {
  std::lock_guard<std::mutex> lock(mu_);
  features_ = features;
}

BackendFeatures ScriptedBackend::features() const {
  std::lock_guard<std::mutex> lock(mu_);
  return features_;
}

Result<GenerationResult> ScriptedBackend::Generate(const GenerationRequest& request,
                                                   const TokenSink& on_token) {
  calls_.fetch_add(1);
  const int now_in_flight = in_flight_.fetch_add(1) + 1;
  int seen = max_in_flight_.load();
  while (now_in_flight > seen && !max_in_flight_.compare_exchange_weak(seen, now_in_flight)) {
  }
  struct Leave {
    std::atomic<int>& n;
    ~Leave() { n.fetch_sub(1); }
  } leave{in_flight_};

  Script script;
  const BackendFeatures features = this->features();
  // Counted once per request, and wakes the gate (lock order: signal, then mu_).
  CancelSignal::Subscription on_cancel;
  if (request.cancel) {
    on_cancel = request.cancel->OnCancel([this] {
      cancel_signals_.fetch_add(1);
      std::lock_guard<std::mutex> lock(mu_);
      gate_cv_.notify_all();
    });
  }
  auto cancelled = [&] { return request.cancel && request.cancel->cancelled(); };
  {
    std::unique_lock<std::mutex> lock(mu_);
    last_request_ = request;
    script = script_;
    // The gate: bounded by the deadline and by 20 s, so a broken test cannot hang.
    const auto limit =
        std::chrono::steady_clock::now() +
        std::chrono::nanoseconds(std::min(request.deadline.Remaining(), core::Seconds(20)));
    if (!gate_cv_.wait_until(lock, limit, [&] { return gate_open_ || cancelled(); })) {
      return DeadlineExceeded("gate stayed closed past the deadline");
    }
    if (!gate_open_) return Cancelled("cancelled while waiting at the gate");
  }
  if (!script.fail_before_first.ok()) return script.fail_before_first;

  const bool endless = script.tokens.empty();
  const int offset = DefaultOffset(request.prompt);
  GenerationResult result;
  result.stats = script.stats;
  for (int i = 0; i < request.max_tokens; ++i) {
    if (!endless && i >= static_cast<int>(script.tokens.size())) {
      result.finish_reason = "stop";
      return result;
    }
    if (i == script.fail_after_tokens) return script.fail_status;
    if (i == script.cancelled_after_tokens) {
      result.finish_reason = "cancelled";
      return result;
    }
    const core::Nanos delay = i == 0 ? script.first_token_delay : script.token_delay;
    if (delay > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(delay));
    if (request.deadline.Expired()) return DeadlineExceeded("scripted request timed out");
    const std::int32_t token = endless ? 'a' + (offset + i) % 26 : script.tokens[i];
    model::TokenLogprobs lp;
    const bool with_lp = features.logprobs && request.sampling.logprobs >= 0;
    if (with_lp) {
      lp.logprob = -0.25f * static_cast<float>(i + 1);
      for (int k = 0; k < request.sampling.logprobs; ++k) {
        lp.top.emplace_back(token + k, lp.logprob - static_cast<float>(k));
      }
    }
    if (!on_token(GeneratedToken(token, 0, with_lp ? &lp : nullptr))) {
      cancellations_.fetch_add(1);
      result.finish_reason = "cancelled";
      return result;
    }
    if (tokenizer_->IsEog(token) && !(features.ignore_eos && request.ignore_eos)) {
      result.finish_reason = "stop";
      return result;
    }
  }
  result.finish_reason = "length";
  return result;
}

}  // namespace smartgen::server::testing
