#include "kernels/kernel_table.h"

#include <cstdlib>
#include <memory>

#include "core/cpu_features.h"

namespace smartgen::kernels::internal {
namespace {

#define SMARTGEN_KERNELS_TABLE(ns, isa_value)                                                      \
  KernelTable {                                                                                    \
    .isa = isa_value,                                                                              \
    .mat_vec =                                                                                     \
        {ns::MatVecF32,  ns::MatVecF16,  ns::MatVecBF16, ns::MatVecQ8_0,   ns::MatVecQ4_0,         \
         ns::MatVecQ4_K, ns::MatVecQ6_K, ns::MatVecQ4_1, ns::MatVecQ5_0,   ns::MatVecQ5_1,         \
         ns::MatVecQ2_K, ns::MatVecQ3_K, ns::MatVecQ5_K, ns::MatVecIQ4_NL, ns::MatVecIQ4_XS},      \
    .mat_mul =                                                                                     \
        {ns::MatMulF32,  ns::MatMulF16,  ns::MatMulBF16, ns::MatMulQ8_0,   ns::MatMulQ4_0,         \
         ns::MatMulQ4_K, ns::MatMulQ6_K, ns::MatMulQ4_1, ns::MatMulQ5_0,   ns::MatMulQ5_1,         \
         ns::MatMulQ2_K, ns::MatMulQ3_K, ns::MatMulQ5_K, ns::MatMulIQ4_NL, ns::MatMulIQ4_XS},      \
    .attend_blocks = ns::AttendBlocks, .attend_causal = ns::AttendCausal, .rms_norm = ns::RmsNorm, \
    .swiglu = ns::SwiGlu, .geglu = ns::GeGlu, .softmax = ns::Softmax,                              \
    .add_in_place = ns::AddInPlace, .rope_apply = ns::RopeApply, .f32_to_f16 = ns::F32ToF16Row,    \
  }

const KernelTable kScalarTable = SMARTGEN_KERNELS_TABLE(scalar, Isa::kScalar);
#if defined(SMARTGEN_KERNELS_X86)
const KernelTable kAvx2Table = SMARTGEN_KERNELS_TABLE(avx2, Isa::kAvx2);
const KernelTable kAvx512Table = SMARTGEN_KERNELS_TABLE(avx512, Isa::kAvx512);
#endif

}  // namespace

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "unknown";
}

const KernelTable* GetKernelTable(Isa isa) {
  [[maybe_unused]] const core::CpuFeatures& f = core::GetCpuFeatures();
  switch (isa) {
    case Isa::kScalar:
      return &kScalarTable;
#if defined(SMARTGEN_KERNELS_X86)
    case Isa::kAvx2:
      return f.HasAvx2() ? &kAvx2Table : nullptr;
    case Isa::kAvx512:
      return f.HasAvx512() ? &kAvx512Table : nullptr;
#endif
    default:
      return nullptr;
  }
}

const KernelTable& ActiveKernels() {
  static const KernelTable* const active = [] {
    for (int i = kNumIsas - 1; i > 0; --i) {
      if (const KernelTable* t = GetKernelTable(static_cast<Isa>(i))) return t;
    }
    return &kScalarTable;
  }();
  return *active;
}

float* ThreadScratch(int slot, std::size_t n_floats) {
  constexpr int kSlots = 8;
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  struct Slot {
    std::unique_ptr<float, Free> data;
    std::size_t size = 0;
  };
  thread_local Slot slots[kSlots];
  Slot& s = slots[slot];
  if (s.size < n_floats) {
    const std::size_t bytes = (n_floats * sizeof(float) + 63) / 64 * 64;
    s.data.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
    s.size = n_floats;
  }
  return s.data.get();
}

}  // namespace smartgen::kernels::internal
