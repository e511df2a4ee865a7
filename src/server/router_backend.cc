#include "server/router_backend.h"

namespace smartgen::server {

std::string RouterBackend::model_name() const {
  const std::string& name = router_->model().config().name;
  return name.empty() ? "smartgen" : name;
}

Result<GenerationResult> RouterBackend::Generate(const GenerationRequest& request,
                                                         const TokenSink& on_token) {
  node::RouteRequest rq;
  rq.prompt = request.prompt;
  rq.max_tokens = request.max_tokens;
  rq.sampling = request.sampling;
  rq.mode = request.transfer_mode;
  if (request.extension.is_object()) {
    const nlohmann::json& ext = request.extension;
    if (ext.contains("options")) rq.options = ext["options"];
    if (ext.contains("ignore_eos")) {
      if (!ext["ignore_eos"].is_boolean()) {
        return InvalidArgument("smartgen.ignore_eos must be a boolean");
      }
      rq.stop_at_eog = !ext["ignore_eos"].get<bool>();
    }
  }
  rq.deadline = request.deadline;
  // The client leaving ends the request on the nodes within about a second (router.h).
  rq.cancelled = [cancel = request.cancel] { return cancel && cancel->cancelled(); };
  SG_ASSIGN_OR_RETURN(node::RouteResult r, router_->Generate(rq, on_token));
  GenerationResult out;
  out.finish_reason = std::move(r.finish_reason);
  out.stats = std::move(r.stats);
  return out;
}

}  // namespace smartgen::server
