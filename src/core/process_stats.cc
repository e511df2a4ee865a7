#include "core/process_stats.h"

#include <cstdio>
#include <cstring>

namespace smartgen::core {
namespace {

std::int64_t ReadStatusKb(const char* key) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  std::int64_t kb = 0;
  const std::size_t key_len = std::strlen(key);
  while (std::fgets(line, sizeof(line), f)) {
    if (std::strncmp(line, key, key_len) == 0) {
      long long v = 0;
      if (std::sscanf(line + key_len, " %lld", &v) == 1) kb = v;
      break;
    }
  }
  std::fclose(f);
  return kb * 1024;
}

}  // namespace

std::int64_t PeakRssBytes() { return ReadStatusKb("VmHWM:"); }
std::int64_t CurrentRssBytes() { return ReadStatusKb("VmRSS:"); }

}  // namespace smartgen::core
