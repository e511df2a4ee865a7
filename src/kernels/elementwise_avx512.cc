// The element-wise kernels compiled for avx512 (flags set in CMakeLists.txt).
#include <cstdint>

#include "kernels/fp16.h"
#include "kernels/kernel_table.h"
#include "kernels/simd_avx512.h"

#define SMARTGEN_SIMD_NS avx512
#include "kernels/elementwise_simd-inl.h"
