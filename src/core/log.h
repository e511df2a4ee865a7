// Logging to stderr, one line per call, thread-safe:
//   2026-11-30T10:07:12.345Z I transfer  connected to 127.0.0.1:7000
// The level comes from SetLogLevel() or the SMARTGEN_LOG environment variable
// (debug|info|warn|error|off); default info. Messages are formatted with fmt only when enabled.
#pragma once

#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace smartgen::core {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// Parses "debug", "info", "warn", "error", "off"; returns false for anything else.
bool ParseLogLevel(std::string_view text, LogLevel* level);

void LogLine(LogLevel level, std::string_view component, std::string_view message);

template <typename... Args>
void Log(LogLevel level, std::string_view component, fmt::format_string<Args...> format,
         Args&&... args) {
  if (level < GetLogLevel()) return;
  LogLine(level, component, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace smartgen::core

#define SG_LOG_DEBUG(component, ...) \
  ::smartgen::core::Log(::smartgen::core::LogLevel::kDebug, component, __VA_ARGS__)
#define SG_LOG_INFO(component, ...) \
  ::smartgen::core::Log(::smartgen::core::LogLevel::kInfo, component, __VA_ARGS__)
#define SG_LOG_WARN(component, ...) \
  ::smartgen::core::Log(::smartgen::core::LogLevel::kWarn, component, __VA_ARGS__)
#define SG_LOG_ERROR(component, ...) \
  ::smartgen::core::Log(::smartgen::core::LogLevel::kError, component, __VA_ARGS__)
