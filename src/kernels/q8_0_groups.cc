#include "kernels/q8_0_groups.h"

#include <algorithm>
#include <cstring>

#include "core/cpu_features.h"
#include "gguf/ggml_type.h"
#include "kernels/grouped_rows-inl.h"
#include "kernels/matmul.h"

namespace smartgen::kernels {
namespace {

constexpr std::size_t kQ8Block = 34;  // sizeof(BlockQ8_0): d, qs[32]
constexpr std::size_t kQ8GroupBytes = kQ8Block * kQ8_0GroupBlocks;

std::size_t RowBytesQ8_0(std::int64_t cols) {
  return gguf::RowBytes(gguf::GgmlType::kQ8_0, cols);
}

// int8 q and the u8 q + 128 differ in the top bit only.
void FlipTopBits(const std::byte* from, std::byte* to, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) to[i] = from[i] ^ std::byte{0x80};
}

// n (1-4) blocks from the file's layout to the grouped one: elements 0-15 of each, elements
// 16-31 of each, the scales, n of each (n = 4: a whole group, kQ8High and kQ8Scales apart).
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
  const std::size_t rb = RowBytesQ8_0(cols);
  const auto blocks = static_cast<std::size_t>(cols / 32);
  std::byte tmp[kQ8GroupBytes];
  for (std::int64_t r = 0; r < rows; ++r) {
    std::byte* row = rows_data + static_cast<std::size_t>(r) * rb;
    for (std::size_t b = 0; b < blocks; b += kQ8_0GroupBlocks) {
      const std::size_t n = std::min<std::size_t>(kQ8_0GroupBlocks, blocks - b);
      std::memcpy(tmp, row + b * kQ8Block, n * kQ8Block);
      GroupBlocksQ8(tmp, n, row + b * kQ8Block);
    }
  }
}

void UngroupQ8_0Rows(const std::byte* src, std::byte* dst, std::int64_t rows, std::int64_t cols) {
  const std::size_t rb = RowBytesQ8_0(cols);
  const auto blocks = static_cast<std::size_t>(cols / 32);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::byte* in = src + static_cast<std::size_t>(r) * rb;
    std::byte* out = dst + static_cast<std::size_t>(r) * rb;
    for (std::size_t b = 0; b < blocks; b += kQ8_0GroupBlocks) {
      const std::size_t n = std::min<std::size_t>(kQ8_0GroupBlocks, blocks - b);
      UngroupBlocksQ8(in + b * kQ8Block, n, out + b * kQ8Block);
    }
  }
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
