// The matrix kernels compiled for avx2 (flags set in CMakeLists.txt).
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/kernel_table.h"
#include "kernels/simd_avx2.h"

#define SMARTGEN_SIMD_NS avx2
#include "kernels/matmul_simd-inl.h"
