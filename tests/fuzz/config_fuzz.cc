// libFuzzer target: the TOML config reader (`--config FILE`). Any file must expand to flags
// or give kInvalidArgument; every expanded argument is a `--name=value` flag.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_file.h"
#include "tools/config_args.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static smartgen::fuzz::FuzzFile file;
  std::string path = file.Write(data, size);
  std::string program = "smartgen", flag = "--config", tail = "--port=1";
  char* argv[] = {program.data(), flag.data(), path.data(), tail.data()};
  auto args = smartgen::tools::ExpandConfigArgs(4, argv);
  if (args.ok()) {
    if (args->size() < 2 || args->front() != "smartgen" || args->back() != "--port=1") {
      __builtin_trap();
    }
    for (std::size_t i = 1; i + 1 < args->size(); ++i) {
      if ((*args)[i].rfind("--", 0) != 0 || (*args)[i].find('=') == std::string::npos) {
        __builtin_trap();
      }
    }
  } else if (args.status().code() != smartgen::StatusCode::kInvalidArgument) {
    __builtin_trap();
  }
  return 0;
}
