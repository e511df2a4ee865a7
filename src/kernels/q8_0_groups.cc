#include "kernels/q8_0_groups.h"

#include <cstring>

#include "core/cpu_features.h"
#include "gguf/ggml_type.h"
#include "kernels/grouped_rows-inl.h"
#include "kernels/matmul.h"

namespace smartgen::kernels {
namespace {

constexpr std::size_t kQ8Block = 34;  // sizeof(BlockQ8_0): d, qs[32]

// int8 q and the u8 q + 128 differ in the top bit only.
void FlipTopBits(const std::byte* from, std::byte* to, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) to[i] = from[i] ^ std::byte{0x80};
}

// n (1-4) blocks from the file's layout to the grouped one: elements 0-15 of each, elements
// 16-31 of each, the scales, n of each (n = 4, a whole group: at bytes 64 and 128).
void GroupBlocksQ8(const std::byte* file, std::size_t n, std::byte* grouped) {
  for (std::size_t k = 0; k < n; ++k) {
    const std::byte* b = file + k * kQ8Block;
    FlipTopBits(b + 2, grouped + 16 * k, 16);
    FlipTopBits(b + 18, grouped + 16 * n + 16 * k, 16);
    std::memcpy(grouped + 32 * n + 2 * k, b, 2);
  }
}

void UngroupBlocksQ8(const std::byte* grouped, std::size_t n, std::byte* file) {
  for (std::size_t k = 0; k < n; ++k) {
    std::byte* b = file + k * kQ8Block;
    std::memcpy(b, grouped + 32 * n + 2 * k, 2);
    FlipTopBits(grouped + 16 * k, b + 2, 16);
    FlipTopBits(grouped + 16 * n + 16 * k, b + 18, 16);
  }
}

}  // namespace

bool Q8_0GroupsPay() {
#if defined(SMARTGEN_KERNELS_X86)
  return internal::ActiveKernels().isa == internal::Isa::kAvx512 &&
         core::GetCpuFeatures().avx512vnni && FastDotActive(gguf::GgmlType::kQ8_0);
#else
  return false;
#endif
}

void GroupQ8_0Rows(std::byte* rows_data, std::int64_t rows, std::int64_t cols) {
  internal::grouped::RegroupRows<kQ8Block>(GroupBlocksQ8, rows_data, rows_data, rows, cols);
}

void UngroupQ8_0Rows(const std::byte* src, std::byte* dst, std::int64_t rows, std::int64_t cols) {
  internal::grouped::RegroupRows<kQ8Block>(UngroupBlocksQ8, src, dst, rows, cols);
}

namespace internal {

MatVecFn GroupedQ8_0(MatVecFn f) {
  static const std::pair<MatVecFn, MatVecFn> kPairs[] = {
    {scalar::MatVecQ8_0, grouped::Vec<UngroupQ8_0Rows, scalar::MatVecQ8_0>},
#if defined(SMARTGEN_KERNELS_X86)
    {avx2::MatVecQ8_0, grouped::Vec<UngroupQ8_0Rows, avx2::MatVecQ8_0>},
    {avx512::MatVecQ8_0, grouped::Vec<UngroupQ8_0Rows, avx512::MatVecQ8_0>},
#endif
  };
  return grouped::Find(f, kPairs, "Q8_0");
}

MatMulFn GroupedQ8_0(MatMulFn f) {
  static const std::pair<MatMulFn, MatMulFn> kPairs[] = {
    {scalar::MatMulQ8_0, grouped::Mul<UngroupQ8_0Rows, scalar::MatMulQ8_0>},
#if defined(SMARTGEN_KERNELS_X86)
    {avx2::MatMulQ8_0, grouped::Mul<UngroupQ8_0Rows, avx2::MatMulQ8_0>},
    {avx512::MatMulQ8_0, grouped::Mul<UngroupQ8_0Rows, avx512::MatMulQ8_0>},
#endif
  };
  return grouped::Find(f, kPairs, "Q8_0");
}

MatVecActFn GroupedQ8_0(MatVecActFn f) {
  static const std::pair<MatVecActFn, MatVecActFn> kPairs[] = {
    {scalar::MatVecQ8_0Act, grouped::VecAct<UngroupQ8_0Rows, scalar::MatVecQ8_0Act>},
#if defined(SMARTGEN_KERNELS_X86)
    {avx2::MatVecQ8_0Act, grouped::VecAct<UngroupQ8_0Rows, avx2::MatVecQ8_0Act>},
    {avx512vnni::MatVecQ8_0, avx512vnni::MatVecQ8_0Groups},
#endif
  };
  return grouped::Find(f, kPairs, "Q8_0");
}

MatMulActFn GroupedQ8_0(MatMulActFn f) {
#if defined(SMARTGEN_KERNELS_X86)
  static const std::pair<MatMulActFn, MatMulActFn> kPairs[] = {
      {avx512vnni::MatMulQ8_0, avx512vnni::MatMulQ8_0Groups},
  };
#else
  static const std::pair<MatMulActFn, MatMulActFn> kPairs[] = {{nullptr, nullptr}};
#endif
  return grouped::Find(f, kPairs, "Q8_0");
}

}  // namespace internal
}  // namespace smartgen::kernels
