// smartgen: prefill/decode disaggregated LLM inference with selective KV-cache transfer.
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/cpu_features.h"
#include "core/log.h"
#include "tools/commands.h"
#include "tools/config_args.h"

namespace smartgen::tools {

int ReportStatus(const char* command, const Status& status) {
  if (status.ok()) return 0;
  std::fprintf(stderr, "smartgen %s: %s\n", command, status.ToString().c_str());
  return 1;
}

}  // namespace smartgen::tools

int main(int argc, char** argv) {
  using namespace smartgen;
  CLI::App app{"smartgen: PD-disaggregated LLM inference with selective KV-cache transfer"};
  app.require_subcommand(1);
  // An option given twice keeps the last value: flags after `--config FILE` override the file.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_version_flag("--version", "smartgen 0.1.0");
  std::string log_level;
  app.add_option("--log", log_level, "log level: debug|info|warn|error|off")
      ->check(CLI::IsMember({"debug", "info", "warn", "error", "off"}));
  app.add_flag_callback("--cpu-info", [] {
    std::printf("%s\n", core::GetCpuFeatures().ToString().c_str());
    std::exit(0);
  }, "print the detected CPU features and exit");
  app.parse_complete_callback([&] {
    core::LogLevel level;
    if (!log_level.empty() && core::ParseLogLevel(log_level, &level)) core::SetLogLevel(level);
  });

  tools::RegisterMakeModel(app);
  tools::RegisterRun(app);
  tools::RegisterProfile(app);
  tools::RegisterEval(app);
  tools::RegisterServe(app);
  tools::RegisterDemo(app);
  tools::RegisterSimulate(app);
  CLI::App* bench = app.add_subcommand("bench", "benchmarks (print JSON with --json)");
  bench->require_subcommand(1);
  tools::RegisterBenchEngine(*bench);
  tools::RegisterBenchTtst(*bench);
  tools::RegisterBenchTransfer(*bench);

  auto expanded = tools::ExpandConfigArgs(argc, argv);
  if (!expanded.ok()) {
    std::fprintf(stderr, "smartgen: %s\n", expanded.status().ToString().c_str());
    return 2;
  }
  std::vector<char*> args;
  for (std::string& a : *expanded) args.push_back(a.data());
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // a subcommand failed; it has printed why
  } catch (const CLI::CallForHelp&) {
    // Help of the innermost subcommand named on the command line, not of the root.
    const CLI::App* leaf = &app;
    while (!leaf->get_subcommands().empty()) leaf = leaf->get_subcommands().front();
    std::printf("%s", leaf->help().c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return 0;
}
