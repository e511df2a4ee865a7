#include "core/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace smartgen::core {
namespace {

LogLevel InitialLevel() {
  LogLevel level = LogLevel::kInfo;
  if (const char* env = std::getenv("SMARTGEN_LOG")) ParseLogLevel(env, &level);
  return level;
}

std::atomic<int>& LevelStore() {
  static std::atomic<int> level{static_cast<int>(InitialLevel())};
  return level;
}

std::mutex& OutputMutex() {
  static std::mutex mu;
  return mu;
}

}  // namespace

void SetLogLevel(LogLevel level) { LevelStore().store(static_cast<int>(level)); }

LogLevel GetLogLevel() { return static_cast<LogLevel>(LevelStore().load(std::memory_order_relaxed)); }

bool ParseLogLevel(std::string_view text, LogLevel* level) {
  if (text == "debug") *level = LogLevel::kDebug;
  else if (text == "info") *level = LogLevel::kInfo;
  else if (text == "warn") *level = LogLevel::kWarn;
  else if (text == "error") *level = LogLevel::kError;
  else if (text == "off") *level = LogLevel::kOff;
  else return false;
  return true;
}

void LogLine(LogLevel level, std::string_view component, std::string_view message) {
  static constexpr char kLetters[] = {'D', 'I', 'W', 'E', '-'};
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const int millis = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
  const std::string line = fmt::format("{}.{:03d}Z {} {:<9} {}\n", stamp, millis,
                                       kLetters[static_cast<int>(level)], component, message);
  std::lock_guard<std::mutex> lock(OutputMutex());
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace smartgen::core
