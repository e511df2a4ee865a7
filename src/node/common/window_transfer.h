// Window-aware transfer (select/needed_blocks.h): which prompt blocks a request's decode needs,
// as both nodes work it out from the same request. On by default; a request's options
// {"window_aware": false} turn it off (the ablation: every block of every layer is sent and
// awaited, as for a model without sliding-window layers). Every transfer mode reads it.
#pragma once

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "model/model_config.h"
#include "node/common/generation_spec.h"
#include "select/needed_blocks.h"

namespace smartgen::node {

// options["window_aware"]: true when absent or null; kInvalidArgument when not a boolean.
Result<bool> ParseWindowAware(const nlohmann::json& options);

// The needs of `spec`'s prompt under `config` in blocks of block_tokens.
Result<select::NeededBlocks> RequestNeededBlocks(const model::ModelConfig& config, int block_tokens,
                                                 const GenerationSpec& spec);

}  // namespace smartgen::node
