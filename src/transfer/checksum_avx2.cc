// xxh3 with avx2 vectors; this file is compiled with the matching -m flags (CMakeLists.txt)
// and only called when the CPU has them.
#include "transfer/checksum.h"

#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_AVX2
#include <xxhash.h>

namespace smartgen::transfer::internal {
namespace {
#include "transfer/checksum_xxh3.inc"
}  // namespace

std::uint64_t ChecksumAvx2(std::span<const ConstBytes> parts) { return HashParts(parts); }

}  // namespace smartgen::transfer::internal
