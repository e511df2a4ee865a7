// The attention kernels compiled for avx512 (flags set in CMakeLists.txt).
#include <cstddef>
#include <cstdint>

#include "kernels/kernel_table.h"

namespace smartgen::kernels::internal::avx512 {
void AttendBlocks(const AttentionParams& p, const float* q, std::int64_t q_pos,
                  const KvBlockRef* blocks, std::size_t n_blocks, float* out, float* lse) {
  scalar::AttendBlocks(p, q, q_pos, blocks, n_blocks, out, lse);
}
void AttendCausal(const AttentionParams& p, const float* q, std::int64_t q_stride,
                  std::int64_t n_tokens, std::int64_t first_pos, const KvBlockRef* blocks,
                  std::size_t n_blocks, float* out, std::int64_t out_stride, float* lse) {
  scalar::AttendCausal(p, q, q_stride, n_tokens, first_pos, blocks, n_blocks, out, out_stride, lse);
}
}  // namespace smartgen::kernels::internal::avx512
