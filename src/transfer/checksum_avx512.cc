// xxh3 with avx512 vectors; this file is compiled with the matching -m flags (CMakeLists.txt)
// and only called when the CPU has them.
#include "transfer/checksum.h"

#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_AVX512
#include <xxhash.h>

namespace smartgen::transfer::internal {
namespace {
#include "transfer/checksum_xxh3.inc"
}  // namespace

std::uint64_t ChecksumAvx512(std::span<const ConstBytes> parts) { return HashParts(parts); }

}  // namespace smartgen::transfer::internal
