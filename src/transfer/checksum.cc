#include "transfer/checksum.h"

#define XXH_INLINE_ALL
#include <xxhash.h>  // baseline vectors (SSE2 on x86-64)

#include "core/cpu_features.h"

namespace smartgen::transfer {
namespace internal {
namespace {
#include "transfer/checksum_xxh3.inc"
}  // namespace

std::uint64_t ChecksumBaseline(std::span<const ConstBytes> parts) { return HashParts(parts); }
}  // namespace internal

namespace {

using ChecksumFn = std::uint64_t (*)(std::span<const ConstBytes>);

ChecksumIsa Select() {
#if defined(SMARTGEN_TRANSFER_X86_CHECKSUM)
  const core::CpuFeatures& cpu = core::GetCpuFeatures();
  if (cpu.HasAvx512()) return ChecksumIsa::kAvx512;
  if (cpu.HasAvx2()) return ChecksumIsa::kAvx2;
#endif
  return ChecksumIsa::kBaseline;
}

ChecksumFn FunctionFor(ChecksumIsa isa) {
  switch (isa) {
#if defined(SMARTGEN_TRANSFER_X86_CHECKSUM)
    case ChecksumIsa::kAvx512: return internal::ChecksumAvx512;
    case ChecksumIsa::kAvx2: return internal::ChecksumAvx2;
#endif
    default: return internal::ChecksumBaseline;
  }
}

ChecksumFn Selected() {
  static const ChecksumFn fn = FunctionFor(Select());
  return fn;
}

}  // namespace

ChecksumIsa SelectedChecksumIsa() {
  static const ChecksumIsa isa = Select();
  return isa;
}

std::uint64_t ChecksumWith(ChecksumIsa isa, std::span<const ConstBytes> parts) {
  return FunctionFor(isa)(parts);
}

std::uint64_t Checksum(std::span<const ConstBytes> parts) { return Selected()(parts); }

std::uint64_t Checksum(ConstBytes bytes) { return Selected()(std::span<const ConstBytes>(&bytes, 1)); }

}  // namespace smartgen::transfer
