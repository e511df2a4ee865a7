#include "tools/config_args.h"

#include <fstream>
#include <string_view>

#include <CLI/CLI.hpp>

namespace smartgen::tools {
namespace {

Status AppendFileArgs(const std::string& path, std::vector<std::string>* out) {
  std::ifstream in(path);
  if (!in) return InvalidArgument("--config {}: cannot read the file", path);
  std::vector<CLI::ConfigItem> items;
  try {
    items = CLI::ConfigTOML().from_config(in);
  } catch (const std::exception& e) {
    return InvalidArgument("--config {}: {}", path, e.what());
  }
  for (const CLI::ConfigItem& item : items) {
    if (item.name == "++" || item.name == "--") continue;  // section markers
    if (!item.parents.empty()) {
      return InvalidArgument("--config {}: '{}' is in a section; put options at the top level",
                             path, item.fullname());
    }
    if (item.inputs.empty()) return InvalidArgument("--config {}: '{}' has no value", path, item.name);
    for (const std::string& value : item.inputs) out->push_back("--" + item.name + "=" + value);
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> ExpandConfigArgs(int argc, char** argv) {
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (i > 0 && arg == "--config") {
      if (i + 1 >= argc) return InvalidArgument("--config needs a file");
      SG_RETURN_IF_ERROR(AppendFileArgs(argv[++i], &out));
    } else if (i > 0 && arg.starts_with("--config=")) {
      SG_RETURN_IF_ERROR(AppendFileArgs(std::string(arg.substr(9)), &out));
    } else {
      out.emplace_back(arg);
    }
  }
  return out;
}

}  // namespace smartgen::tools
