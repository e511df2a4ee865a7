// `--config FILE` for every smartgen command: the file's options (TOML, `name = value` or
// `name = ["a", "b"]` at the top level, named as the long flags without dashes) are spliced
// into the command line where `--config FILE` stood, so flags given after it win.
//   # router.toml
//   prefill = ["10.0.0.1:8101", "10.0.0.2:8101"]
//   decode = ["10.0.0.3:8201"]
//   port = 8000
//   smartgen serve router --config router.toml --port 8080
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace smartgen::tools {

// argv (program name included) with every `--config FILE` / `--config=FILE` replaced by
// `--name=value` arguments, one per value. A file that cannot be read, is not TOML or has
// sections is kInvalidArgument naming it.
Result<std::vector<std::string>> ExpandConfigArgs(int argc, char** argv);

}  // namespace smartgen::tools
