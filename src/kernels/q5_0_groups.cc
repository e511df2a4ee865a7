#include "kernels/q5_0_groups.h"

#include <cstring>

#include "core/cpu_features.h"
#include "gguf/ggml_type.h"
#include "kernels/grouped_rows-inl.h"
#include "kernels/matmul.h"

namespace smartgen::kernels {
namespace {

constexpr std::size_t kQ5Block = 22;  // sizeof(BlockQ5_0): d, qh[4], qs[16]

// n (1-4) blocks from the file's layout to the grouped one: nibbles, qh low halves, qh high
// halves, scales, each n entries long (n = 4, a whole group: at bytes 64, 72 and 80).
void GroupBlocks(const std::byte* file, std::size_t n, std::byte* grouped) {
  for (std::size_t k = 0; k < n; ++k) {
    const std::byte* b = file + k * kQ5Block;
    std::memcpy(grouped + 16 * k, b + 6, 16);
    std::memcpy(grouped + 16 * n + 2 * k, b + 2, 2);  // qh is little-endian: bits 0-15 first
    std::memcpy(grouped + 18 * n + 2 * k, b + 4, 2);
    std::memcpy(grouped + 20 * n + 2 * k, b, 2);
  }
}

void UngroupBlocks(const std::byte* grouped, std::size_t n, std::byte* file) {
  for (std::size_t k = 0; k < n; ++k) {
    std::byte* b = file + k * kQ5Block;
    std::memcpy(b, grouped + 20 * n + 2 * k, 2);
    std::memcpy(b + 2, grouped + 16 * n + 2 * k, 2);
    std::memcpy(b + 4, grouped + 18 * n + 2 * k, 2);
    std::memcpy(b + 6, grouped + 16 * k, 16);
  }
}

}  // namespace

bool Q5_0GroupsPay() {
#if defined(SMARTGEN_KERNELS_X86)
  return internal::ActiveKernels().isa == internal::Isa::kAvx512 &&
         core::GetCpuFeatures().avx512vnni && FastDotActive(gguf::GgmlType::kQ5_0);
#else
  return false;
#endif
}

void GroupQ5_0Rows(std::byte* rows_data, std::int64_t rows, std::int64_t cols) {
  internal::grouped::RegroupRows<kQ5Block>(GroupBlocks, rows_data, rows_data, rows, cols);
}

void UngroupQ5_0Rows(const std::byte* src, std::byte* dst, std::int64_t rows, std::int64_t cols) {
  internal::grouped::RegroupRows<kQ5Block>(UngroupBlocks, src, dst, rows, cols);
}

namespace internal {

MatVecFn GroupedQ5_0(MatVecFn f) {
  static const std::pair<MatVecFn, MatVecFn> kPairs[] = {
    {scalar::MatVecQ5_0, grouped::Vec<UngroupQ5_0Rows, scalar::MatVecQ5_0>},
#if defined(SMARTGEN_KERNELS_X86)
    {avx2::MatVecQ5_0, grouped::Vec<UngroupQ5_0Rows, avx2::MatVecQ5_0>},
    {avx512::MatVecQ5_0, grouped::Vec<UngroupQ5_0Rows, avx512::MatVecQ5_0>},
#endif
  };
  return grouped::Find(f, kPairs, "Q5_0");
}

MatMulFn GroupedQ5_0(MatMulFn f) {
  static const std::pair<MatMulFn, MatMulFn> kPairs[] = {
    {scalar::MatMulQ5_0, grouped::Mul<UngroupQ5_0Rows, scalar::MatMulQ5_0>},
#if defined(SMARTGEN_KERNELS_X86)
    {avx2::MatMulQ5_0, grouped::Mul<UngroupQ5_0Rows, avx2::MatMulQ5_0>},
    {avx512::MatMulQ5_0, grouped::Mul<UngroupQ5_0Rows, avx512::MatMulQ5_0>},
#endif
  };
  return grouped::Find(f, kPairs, "Q5_0");
}

MatVecActFn GroupedQ5_0(MatVecActFn f) {
  static const std::pair<MatVecActFn, MatVecActFn> kPairs[] = {
    {scalar::MatVecQ5_0Act, grouped::VecAct<UngroupQ5_0Rows, scalar::MatVecQ5_0Act>},
#if defined(SMARTGEN_KERNELS_X86)
    {avx2::MatVecQ5_0Act, grouped::VecAct<UngroupQ5_0Rows, avx2::MatVecQ5_0Act>},
    {avx512vnni::MatVecQ5_0, avx512vnni::MatVecQ5_0Groups},
#endif
  };
  return grouped::Find(f, kPairs, "Q5_0");
}

MatMulActFn GroupedQ5_0(MatMulActFn f) {
#if defined(SMARTGEN_KERNELS_X86)
  static const std::pair<MatMulActFn, MatMulActFn> kPairs[] = {
      {avx512vnni::MatMulQ5_0, avx512vnni::MatMulQ5_0Groups},
      {avx2::MatMulQ5_0, grouped::MulAct<UngroupQ5_0Rows, avx2::MatMulQ5_0>},
  };
#else
  static const std::pair<MatMulActFn, MatMulActFn> kPairs[] = {{nullptr, nullptr}};
#endif
  return grouped::Find(f, kPairs, "Q5_0");
}

}  // namespace internal
}  // namespace smartgen::kernels
