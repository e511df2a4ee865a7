#include "core/cpu_placement.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>

#include <fmt/format.h>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

namespace smartgen::core {
namespace {

// The highest CPU number a list may name (glibc's cpu_set_t holds 1024).
constexpr int kMaxCpu = 1023;

// Parses the decimal CPU number `s` (digits only), or -1.
int ParseCpu(std::string_view s) {
  if (s.empty() || s.size() > 6) return -1;
  int v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

#if defined(__linux__)
static_assert(kMaxCpu < CPU_SETSIZE);

Result<cpu_set_t> ToCpuSet(const std::vector<int>& cpus) {
  if (cpus.empty()) return InvalidArgument("an empty CPU list");
  cpu_set_t set;
  CPU_ZERO(&set);
  for (const int c : cpus) {
    if (c < 0 || c > kMaxCpu) return InvalidArgument("CPU {} is out of range (0-{})", c, kMaxCpu);
    CPU_SET(c, &set);
  }
  return set;
}
#endif

}  // namespace

Result<std::vector<int>> AllowedCpus() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    return Unavailable("sched_getaffinity: {}", std::strerror(errno));
  }
  std::vector<int> cpus;
  for (int c = 0; c <= kMaxCpu; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
#else
  return Unimplemented("CPU placement is supported on Linux only");
#endif
}

Result<std::vector<int>> ParseCpuList(std::string_view text) {
  if (text.empty()) return InvalidArgument("empty CPU list (write it as 0-3,8)");
  std::vector<int> cpus;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view item = text.substr(at, comma - at);
    const std::size_t dash = item.find('-');
    const int first = ParseCpu(item.substr(0, dash));
    const int last = dash == std::string_view::npos ? first : ParseCpu(item.substr(dash + 1));
    if (first < 0 || last < 0) {
      return InvalidArgument("CPU list '{}': '{}' is not a CPU number or an ascending range a-b", text, item);
    }
    if (last < first) return InvalidArgument("CPU list '{}': range '{}' descends", text, item);
    for (int c = first; c <= last; ++c) {
      if (c > kMaxCpu) return InvalidArgument("CPU list '{}': CPU {} is out of range (0-{})", text, c, kMaxCpu);
      cpus.push_back(c);
    }
    at = comma + 1;
  }
  std::vector<int> sorted = cpus;
  std::sort(sorted.begin(), sorted.end());
  const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  if (dup != sorted.end()) return InvalidArgument("CPU list '{}' names CPU {} twice", text, *dup);
  SG_ASSIGN_OR_RETURN(const std::vector<int> allowed, AllowedCpus());
  std::vector<int> missing;
  std::set_difference(sorted.begin(), sorted.end(), allowed.begin(), allowed.end(),
                      std::back_inserter(missing));
  if (!missing.empty()) {
    return InvalidArgument("CPU list '{}': this process may not run on CPU {} (it may use {})", text,
                           FormatCpuList(missing), FormatCpuList(allowed));
  }
  return cpus;
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::vector<int> s = cpus;
  std::sort(s.begin(), s.end());
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t j = i;
    while (j + 1 < s.size() && s[j + 1] == s[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", s[i]) : fmt::format("{}-{}", s[i], s[j]);
    i = j + 1;
  }
  return out;
}

Status PlaceProcessOn(const std::vector<int>& cpus) {
#if defined(__linux__)
  SG_ASSIGN_OR_RETURN(const cpu_set_t set, ToCpuSet(cpus));
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    return Unavailable("sched_setaffinity({}): {}", FormatCpuList(cpus), std::strerror(errno));
  }
  // Threads made later take the default attributes' mask, not their creator's.
  pthread_attr_t attr;
  int rc = pthread_getattr_default_np(&attr);
  if (rc != 0) return Unavailable("pthread_getattr_default_np: {}", std::strerror(rc));
  rc = pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
  if (rc == 0) rc = pthread_setattr_default_np(&attr);
  pthread_attr_destroy(&attr);
  if (rc != 0) return Unavailable("default thread CPUs {}: {}", FormatCpuList(cpus), std::strerror(rc));
  return Status::Ok();
#else
  (void)cpus;
  return Unimplemented("CPU placement is supported on Linux only");
#endif
}

namespace {

Status PinHandleTo(std::thread::native_handle_type handle, int cpu) {
#if defined(__linux__)
  SG_ASSIGN_OR_RETURN(const cpu_set_t set, ToCpuSet({cpu}));
  const int rc = pthread_setaffinity_np(handle, sizeof(set), &set);
  if (rc != 0) return Unavailable("pinning a thread to CPU {}: {}", cpu, std::strerror(rc));
  return Status::Ok();
#else
  (void)handle;
  (void)cpu;
  return Unimplemented("CPU placement is supported on Linux only");
#endif
}

}  // namespace

Status PinThisThreadTo(int cpu) { return PinHandleTo(pthread_self(), cpu); }

Status PinThreadTo(std::thread& thread, int cpu) { return PinHandleTo(thread.native_handle(), cpu); }

}  // namespace smartgen::core
