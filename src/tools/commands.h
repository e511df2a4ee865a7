// The `smartgen` command's subcommands. Each lives in its own cmd_<name>.cc and adds itself to
// the CLI11 app (or to the `bench` group) here; main.cc calls every Register function.
// A subcommand's callback returns through ExitWith(): 0 on success, 1 with the Status printed.
#pragma once

#include <CLI/CLI.hpp>

#include "core/status.h"

namespace smartgen::tools {

// Prints a non-OK status as "smartgen <command>: CODE: message" and returns the exit code.
int ReportStatus(const char* command, const Status& status);

// Top-level subcommands.
void RegisterMakeModel(CLI::App& app);
void RegisterRun(CLI::App& app);
void RegisterProfile(CLI::App& app);
void RegisterEval(CLI::App& app);
void RegisterServe(CLI::App& app);
void RegisterDemo(CLI::App& app);
void RegisterSimulate(CLI::App& app);

// `smartgen bench <what>` subcommands.
void RegisterBenchEngine(CLI::App& bench);
void RegisterBenchTtst(CLI::App& bench);
void RegisterBenchTransfer(CLI::App& bench);

}  // namespace smartgen::tools
