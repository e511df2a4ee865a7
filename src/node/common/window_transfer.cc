#include "node/common/window_transfer.h"

namespace smartgen::node {

Result<bool> ParseWindowAware(const nlohmann::json& options) {
  if (!options.is_object() || !options.contains("window_aware") ||
      options["window_aware"].is_null()) {
    return true;
  }
  if (!options["window_aware"].is_boolean())
    return InvalidArgument("option 'window_aware' must be a boolean");
  return options["window_aware"].get<bool>();
}

Result<select::NeededBlocks> RequestNeededBlocks(const model::ModelConfig& config, int block_tokens,
                                                 const GenerationSpec& spec) {
  SG_ASSIGN_OR_RETURN(const bool window_aware, ParseWindowAware(spec.options));
  return select::PromptNeededBlocks(config, block_tokens,
                                    static_cast<std::int64_t>(spec.prompt.size()), window_aware);
}

}  // namespace smartgen::node
