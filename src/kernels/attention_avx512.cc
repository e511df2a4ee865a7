// The attention kernels compiled for avx512 (flags set in CMakeLists.txt).
#include <cstddef>
#include <cstdint>

#include "kernels/kernel_table.h"
#include "kernels/simd_avx512.h"

#define SMARTGEN_SIMD_NS avx512
#include "kernels/attention_simd-inl.h"
// After the shared helpers they use:
#include "kernels/attention_decode_online_simd-inl.h"
#include "kernels/attention_decode_simd-inl.h"
