// CPU features detected at run time, for choosing SIMD kernels.
// The binary is built without -march=native; each SIMD path is compiled for its own ISA and
// selected by these flags. SMARTGEN_ISA=scalar|avx2|avx512 caps the level (tests, comparisons).
#pragma once

#include <string>

namespace smartgen::core {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  bool avx_vnni = false;

  bool HasAvx2() const { return avx2 && fma && f16c; }
  bool HasAvx512() const { return HasAvx2() && avx512f && avx512bw && avx512vl; }
  std::string ToString() const;
};

// What this CPU supports, after the SMARTGEN_ISA cap. Computed once; thread-safe.
const CpuFeatures& GetCpuFeatures();
// What this CPU supports, ignoring SMARTGEN_ISA.
CpuFeatures DetectCpuFeatures();

}  // namespace smartgen::core
