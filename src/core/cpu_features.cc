#include "core/cpu_features.h"

#include <cstdlib>
#include <string_view>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace smartgen::core {

CpuFeatures DetectCpuFeatures() {
  CpuFeatures f;
#if defined(__x86_64__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  unsigned a, b, c, d;
  if (__get_cpuid(1, &a, &b, &c, &d)) f.f16c = (c >> 29) & 1;
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
    f.avx512bf16 = (a >> 5) & 1;
    f.avx_vnni = (a >> 4) & 1;
  }
  // The OS must save the wide registers (XCR0) or the instructions fault.
  if (__get_cpuid(1, &a, &b, &c, &d) && ((c >> 27) & 1)) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    const bool ymm = (lo & 0x6) == 0x6;
    const bool zmm = (lo & 0xe6) == 0xe6;
    if (!ymm) f.avx2 = f.fma = f.f16c = f.avx_vnni = false;
    if (!zmm) f.avx512f = f.avx512bw = f.avx512vl = f.avx512vnni = f.avx512bf16 = false;
  }
#endif
  return f;
}

const CpuFeatures& GetCpuFeatures() {
  static const CpuFeatures features = [] {
    CpuFeatures f = DetectCpuFeatures();
    if (const char* cap = std::getenv("SMARTGEN_ISA")) {
      const std::string_view isa(cap);
      if (isa == "scalar") f = CpuFeatures{};
      if (isa == "avx2") f.avx512f = f.avx512bw = f.avx512vl = f.avx512vnni = f.avx512bf16 = false;
    }
    return f;
  }();
  return features;
}

std::string CpuFeatures::ToString() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512vnni, "avx512vnni");
  add(avx512bf16, "avx512bf16");
  add(avx_vnni, "avx_vnni");
  return s.empty() ? "scalar" : s;
}

}  // namespace smartgen::core
