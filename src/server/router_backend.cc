#include "server/router_backend.h"

#include <algorithm>

namespace smartgen::server {

std::string RouterBackend::model_name() const {
  const std::string& name = router_->model().config().name;
  return name.empty() ? "smartgen" : name;
}

Result<GenerationResult> RouterBackend::Generate(const GenerationRequest& request,
                                                         const TokenSink& on_token) {
  node::RouteRequest rq;
  rq.spec.prompt = request.prompt;
  rq.spec.max_tokens = request.max_tokens;
  rq.spec.sampling = request.sampling;
  rq.spec.stop_at_eog = !request.ignore_eos;
  rq.spec.n = std::max(request.n, 1);  // one prefill and one KV transfer for all of them
  rq.mode = request.transfer_mode;
  if (request.extension.is_object()) {
    const nlohmann::json& ext = request.extension;
    if (ext.contains("options")) rq.spec.options = ext["options"];
    if (ext.contains("ignore_eos")) {
      if (!ext["ignore_eos"].is_boolean()) {
        return InvalidArgument("smartgen.ignore_eos must be a boolean");
      }
      rq.spec.stop_at_eog = !ext["ignore_eos"].get<bool>();
    }
    // Teacher forcing (generation_spec.h): the output is these tokens, and the decode node
    // reports its own argmax at each of them in the stats.
    if (ext.contains("forced_tokens")) {
      const nlohmann::json& f = ext["forced_tokens"];
      bool ok = f.is_array() && f.size() <= static_cast<std::size_t>(request.max_tokens);
      const auto n_vocab = static_cast<std::int64_t>(router_->model().config().n_vocab);
      for (std::size_t i = 0; ok && i < f.size(); ++i) {
        ok = f[i].is_number_integer() && f[i].get<std::int64_t>() >= 0 &&
             f[i].get<std::int64_t>() < n_vocab;
        if (ok) rq.spec.forced_tokens.push_back(f[i].get<std::int32_t>());
      }
      if (!ok) {
        return InvalidArgument("smartgen.forced_tokens must be at most max_tokens token ids "
                               "below the vocabulary size");
      }
    }
  }
  rq.deadline = request.deadline;
  // The client leaving ends the request on the nodes within about a second (router.h).
  rq.cancelled = [cancel = request.cancel] { return cancel && cancel->cancelled(); };
  const node::Router::ChoiceSink sink = [&on_token](int choice, std::int32_t t,
                                                    const model::TokenLogprobs* logprobs) {
    return on_token(GeneratedToken(t, choice, logprobs));
  };
  SG_ASSIGN_OR_RETURN(node::RouteResult r, router_->Generate(rq, sink));
  GenerationResult out;
  out.finish_reason = std::move(r.finish_reason);
  out.stats = std::move(r.stats);
  return out;
}

}  // namespace smartgen::server
