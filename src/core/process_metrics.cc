#include "core/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>

#include "core/metrics.h"
#include "core/process_stats.h"

#ifndef SMARTGEN_VERSION
#define SMARTGEN_VERSION "unknown"
#endif

namespace smartgen::core {
namespace {

struct ProcStat {
  double cpu_seconds = -1;
  double start_time = -1;  // Unix seconds
  double vsize = -1;       // bytes
};

// /proc/self/stat: utime, stime (fields 14, 15), starttime (22, clock ticks after boot),
// vsize (23). Field 2 (comm) may hold spaces: parse after its closing parenthesis.
ProcStat ReadProcStat() {
  ProcStat st;
  std::FILE* f = std::fopen("/proc/self/stat", "r");
  if (f == nullptr) return st;
  char buf[1024];
  const std::size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return st;
  unsigned long long utime = 0, stime = 0, start = 0, vsize = 0;
  // After ')': state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
  // utime(14) stime(15) cutime cstime priority nice threads itrealvalue starttime(22) vsize(23)
  if (std::sscanf(p + 1,
                  " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d "
                  "%*d %llu %llu",
                  &utime, &stime, &start, &vsize) != 4) {
    return st;
  }
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  if (ticks <= 0) return st;
  st.cpu_seconds = static_cast<double>(utime + stime) / ticks;
  st.vsize = static_cast<double>(vsize);
  // Boot time from /proc/stat's btime.
  std::FILE* s = std::fopen("/proc/stat", "r");
  if (s != nullptr) {
    char line[256];
    while (std::fgets(line, sizeof(line), s)) {
      unsigned long long btime = 0;
      if (std::sscanf(line, "btime %llu", &btime) == 1) {
        st.start_time = static_cast<double>(btime) + static_cast<double>(start) / ticks;
        break;
      }
    }
    std::fclose(s);
  }
  return st;
}

int CountOpenFds() {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  int n = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n - 1;  // the directory stream's own descriptor
}

void AppendProcessSample(std::string* out, const char* name, const char* help, const char* type,
                         double v) {
  if (v < 0) return;
  AppendMetricHeader(out, name, help, type);
  AppendMetricSample(out, name, {}, v);
}

}  // namespace

void AppendProcessMetrics(std::string* out, std::string_view role) {
  const ProcStat st = ReadProcStat();
  AppendProcessSample(out, "process_cpu_seconds_total",
                      "Total user and system CPU time spent in seconds.", "counter",
                      st.cpu_seconds);
  AppendProcessSample(out, "process_start_time_seconds",
                      "Start time of the process since unix epoch in seconds.", "gauge",
                      st.start_time);
  AppendProcessSample(out, "process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge",
                      st.vsize);
  const std::int64_t rss = CurrentRssBytes();
  AppendProcessSample(out, "process_resident_memory_bytes", "Resident memory size in bytes.",
                      "gauge", rss > 0 ? static_cast<double>(rss) : -1);
  AppendProcessSample(out, "process_open_fds", "Number of open file descriptors.", "gauge",
                      CountOpenFds());
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    AppendProcessSample(out, "process_max_fds", "Maximum number of open file descriptors.", "gauge",
                        static_cast<double>(lim.rlim_cur));
  }
#ifdef NDEBUG
  const char* build_type = "release";
#else
  const char* build_type = "debug";
#endif
  AppendMetricHeader(out, "smartgen_build_info",
                     "smartgen build: version, compiler and build type (always 1)", "gauge");
  AppendMetricSample(out, "smartgen_build_info",
                     {{"version", SMARTGEN_VERSION},
                      {"compiler", __VERSION__},
                      {"build_type", build_type},
                      {"role", std::string(role)}},
                     1);
}

}  // namespace smartgen::core
